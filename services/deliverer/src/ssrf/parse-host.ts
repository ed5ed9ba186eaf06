import { isIPv6 } from 'node:net';

export interface ParsedAddress {
  family: 4 | 6;
  /** Canonical text: dotted quad, or compressed lower-case IPv6 without brackets or zone. */
  address: string;
}

const PART = /^(0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)$/i;

function partValue(p: string): number {
  if (/^0x/i.test(p)) return p.length === 2 ? 0 : parseInt(p.slice(2), 16);
  if (p.length > 1 && p.startsWith('0')) return parseInt(p, 8);
  return Number(p);
}

/**
 * IPv4 the way inet_aton (and the WHATWG URL parser) reads it: 1 to 4 parts, each decimal,
 * octal (`0177`) or hex (`0x7f`), the last part filling the remaining bytes, so
 * `2130706433`, `0177.0.0.1`, `0x7f.1` and `127.1` all mean 127.0.0.1.
 */
export function parseIPv4(host: string): string | null {
  const h = host.endsWith('.') ? host.slice(0, -1) : host;
  const parts = h.split('.');
  if (parts.length < 1 || parts.length > 4 || parts.some((p) => !PART.test(p))) return null;
  const values = parts.map(partValue);
  const last = values.pop()!;
  if (values.some((v) => v > 255)) return null;
  const lastBytes = 4 - values.length;
  if (last >= 2 ** (8 * lastBytes)) return null;
  const bytes = [...values];
  for (let i = lastBytes - 1; i >= 0; i--) bytes.push(Math.floor(last / 2 ** (8 * i)) % 256);
  return bytes.join('.');
}

/** Canonical compressed IPv6 (via the URL parser), or null. Zone ids (`%eth0`) are dropped. */
export function canonicalIPv6(host: string): string | null {
  let h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const zone = h.indexOf('%');
  if (zone >= 0) h = h.slice(0, zone);
  if (!isIPv6(h)) return null;
  return new URL(`http://[${h}]/`).hostname.slice(1, -1);
}

/** The 8 hextets of a canonical IPv6 address. */
export function hextets(canonical: string): number[] {
  const [head = '', tail] = canonical.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  return [...h, ...new Array<string>(fill).fill('0'), ...t].map((x) => parseInt(x, 16));
}

/** A host (as found in a URL or typed by a user) that is an IP literal, in any notation. */
export function parseHost(host: string): ParsedAddress | null {
  const v6 = canonicalIPv6(host.trim().toLowerCase());
  if (v6) return { family: 6, address: v6 };
  const v4 = parseIPv4(host.trim().toLowerCase());
  return v4 ? { family: 4, address: v4 } : null;
}

/**
 * A host made only of digits, dots and hex markers that still is not a valid address
 * (`08.1`, `1.2.3.4.5`, `0x1g`) is ambiguous between resolvers, so it is refused rather
 * than sent to DNS.
 */
export function looksNumeric(host: string): boolean {
  const labels = host.replace(/\.$/, '').split('.');
  const last = labels[labels.length - 1] ?? '';
  return /^(0x[0-9a-f]*|[0-9]+)$/i.test(last);
}
