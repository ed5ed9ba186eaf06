// What the agent may connect to (EDGE_ALLOWED_TARGETS, EDGE_DENY_LINK_LOCAL): pure, no DNS,
// no traffic. target-guard.ts applies it to the addresses a connection actually uses.
import { cidrContains, parseCidr, parseIp, type Cidr } from '@hookline/http';

/** Why an address is refused: a link-local or cloud metadata address, or one not listed. */
export type TargetRefusal = 'link_local' | 'not_allowed';

export interface TargetPolicy {
  /** EDGE_ALLOWED_TARGETS is set: only listed ranges and host names are reached. */
  restricted: boolean;
  cidrs: readonly Cidr[];
  /** Listed host names, lower case, without a trailing dot. */
  hosts: ReadonlySet<string>;
  denyLinkLocal: boolean;
  /** The listed ranges inside a link-local or metadata range: only they lift its refusal. */
  linkLocalListed: readonly Cidr[];
}

const ranges = (list: string[]): Cidr[] =>
  list.map((s) => {
    const c = parseCidr(s);
    if (!c) throw new Error(`bad built-in range ${s}`);
    return c;
  });

/**
 * Refused by EDGE_DENY_LINK_LOCAL. An IPv4 range also matches its IPv4-mapped form
 * (::ffff:169.254.169.254): @hookline/http holds IPv4 as v4-mapped IPv6.
 */
export const LINK_LOCAL_RANGES: readonly Cidr[] = ranges([
  // IPv4 link-local: the AWS/GCP/Azure/OpenStack metadata service 169.254.169.254, ECS 169.254.170.2.
  '169.254.0.0/16',
  'fe80::/10',
  // The same IPv4 range in its IPv4-compatible and NAT64 forms.
  '::169.254.0.0/112',
  '64:ff9b::169.254.0.0/112',
  // Metadata services outside link-local: AWS over IPv6, Azure wireserver, Alibaba Cloud.
  'fd00:ec2::254',
  '168.63.129.16',
  '100.100.100.200',
]);

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*$/;

/** A URL host as compared with listed names: lower case, no brackets, no trailing dot. */
export function normalizeHost(host: string): string {
  return host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
}

/**
 * EDGE_ALLOWED_TARGETS (comma-separated CIDRs, addresses and host names; empty: no list) and
 * EDGE_DENY_LINK_LOCAL. `invalid` lists the entries that are neither a CIDR nor a host name
 * (a name whose last label is numeric, `10.1`, is neither: URLs read it as an address).
 */
export function parseTargetPolicy(allowed: string, denyLinkLocal: boolean): { policy: TargetPolicy; invalid: string[] } {
  const entries = allowed.split(',').map((e) => e.trim()).filter(Boolean);
  const cidrs: Cidr[] = [];
  const hosts = new Set<string>();
  const invalid: string[] = [];
  for (const entry of entries) {
    const cidr = parseCidr(entry);
    const host = normalizeHost(entry);
    if (cidr) cidrs.push(cidr);
    else if (HOST_NAME.test(host) && !/^(0x[0-9a-f]*|\d+)$/.test(host.split('.').pop() ?? '')) hosts.add(host);
    else invalid.push(entry);
  }
  const linkLocalListed = cidrs.filter((c) => LINK_LOCAL_RANGES.some((r) => c.prefix >= r.prefix && cidrContains(r, c.bytes)));
  return { policy: { restricted: allowed.trim() !== '', cidrs, hosts, denyLinkLocal, linkLocalListed }, invalid };
}

/**
 * Whether the agent may connect to `address` (the address a socket would use) for a URL
 * whose host is `host`. Link-local and metadata addresses are refused (when denied) unless a
 * listed range inside them covers the address, whatever host name led there; with a list,
 * the address must be in a listed range or the host name listed exactly.
 */
export function refusalOf(policy: TargetPolicy, host: string, address: string): TargetRefusal | null {
  const ip = parseIp(normalizeHost(address));
  if (!ip) return 'not_allowed';
  const within = (list: readonly Cidr[]): boolean => list.some((c) => cidrContains(c, ip));
  if (policy.denyLinkLocal && within(LINK_LOCAL_RANGES) && !within(policy.linkLocalListed)) return 'link_local';
  if (policy.restricted && !policy.hosts.has(normalizeHost(host)) && !within(policy.cidrs)) return 'not_allowed';
  return null;
}
