import { BlockList } from 'node:net';
import { hextets, parseHost } from './parse-host';

export type RefusedClass =
  | 'not_an_ip'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'unique_local'
  | 'metadata';

export type AddressVerdict = { allowed: true; address: string; family: 4 | 6 } | { allowed: false; reason: RefusedClass };

function list(entries: string[]): BlockList {
  const b = new BlockList();
  for (const e of entries) {
    const [net, len] = e.split('/') as [string, string];
    b.addSubnet(net, Number(len), net.includes(':') ? 'ipv6' : 'ipv4');
  }
  return b;
}

// Checked in this order: the first match names the reason.
const V4: [RefusedClass, BlockList][] = [
  // AWS/GCP/Azure/OpenStack metadata, Azure wireserver, Alibaba metadata.
  ['metadata', list(['169.254.169.254/32', '168.63.129.16/32', '100.100.100.200/32'])],
  ['unspecified', list(['0.0.0.0/8'])],
  ['loopback', list(['127.0.0.0/8'])],
  ['private', list(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'])],
  ['link_local', list(['169.254.0.0/16'])],
  ['cgnat', list(['100.64.0.0/10'])],
  ['broadcast', list(['255.255.255.255/32'])],
  ['multicast', list(['224.0.0.0/4'])],
  // IETF protocol assignments, documentation, 6to4 relay, benchmarking, class E.
  ['reserved', list(['192.0.0.0/24', '192.0.2.0/24', '192.88.99.0/24', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '240.0.0.0/4'])],
];

const V6: [RefusedClass, BlockList][] = [
  ['metadata', list(['fd00:ec2::254/128'])],
  ['unique_local', list(['fc00::/7'])],
  ['link_local', list(['fe80::/10'])],
  ['multicast', list(['ff00::/8'])],
  // Site-local (deprecated), discard, IETF assignments (Teredo, ...), documentation, 6to4,
  // NAT64 local use.
  ['reserved', list(['fec0::/10', '100::/64', '2001::/23', '2001:db8::/32', '2002::/16', '3fff::/20', '64:ff9b:1::/48'])],
];

// Only 2000::/3 is global unicast today; everything else not named above is reserved.
const GLOBAL_UNICAST = list(['2000::/3']);

function classifyV4(address: string): AddressVerdict {
  for (const [reason, b] of V4) if (b.check(address, 'ipv4')) return { allowed: false, reason };
  return { allowed: true, address, family: 4 };
}

function embeddedV4(h: number[]): string {
  return [h[6]! >> 8, h[6]! & 0xff, h[7]! >> 8, h[7]! & 0xff].join('.');
}

function classifyV6(address: string): AddressVerdict {
  const h = hextets(address);
  const zeroUpTo = (n: number): boolean => h.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(8)) return { allowed: false, reason: 'unspecified' };
  if (zeroUpTo(7) && h[7] === 1) return { allowed: false, reason: 'loopback' };
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d)
  // reach the embedded IPv4 address, so they get its verdict.
  const mapped = zeroUpTo(5) && h[5] === 0xffff;
  const nat64 = h[0] === 0x64 && h[1] === 0xff9b && h.slice(2, 6).every((x) => x === 0);
  if (mapped || zeroUpTo(6) || nat64) {
    const v = classifyV4(embeddedV4(h));
    return v.allowed ? { allowed: true, address, family: 6 } : v;
  }
  for (const [reason, b] of V6) if (b.check(address, 'ipv6')) return { allowed: false, reason };
  if (!GLOBAL_UNICAST.check(address, 'ipv6')) return { allowed: false, reason: 'reserved' };
  return { allowed: true, address, family: 6 };
}

/**
 * Whether an outbound connection to this address is allowed by default: refuses loopback,
 * private, link-local, CGNAT, multicast, broadcast, reserved, unique-local and cloud
 * metadata addresses, IPv4-mapped forms of them, and any notation inet_aton accepts.
 * Pure: no DNS, no traffic.
 */
export function classifyAddress(ip: string): AddressVerdict {
  const parsed = parseHost(ip);
  if (!parsed) return { allowed: false, reason: 'not_an_ip' };
  return parsed.family === 4 ? classifyV4(parsed.address) : classifyV6(parsed.address);
}
