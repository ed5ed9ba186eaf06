/**
 * IPv4 and IPv6 addresses and CIDR ranges as 16 bytes each. IPv4 is held as its
 * v4-mapped IPv6 form (::ffff:a.b.c.d), so `10.0.0.0/8` also matches `::ffff:10.1.2.3`
 * (what a dual-stack socket reports) and one comparison serves both families.
 */
export interface Cidr {
  bytes: Uint8Array;
  /** Prefix length over all 128 bits (an IPv4 /8 is 104 here). */
  prefix: number;
}

const V4_MAPPED = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

function parseV4(s: string): number[] | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p.startsWith('0'))) return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out;
}

function hextets(s: string): number[] | null {
  if (s === '') return [];
  const out: number[] = [];
  for (const h of s.split(':')) {
    if (!/^[0-9a-f]{1,4}$/i.test(h)) return null;
    out.push(parseInt(h, 16));
  }
  return out;
}

function parseV6(input: string): number[] | null {
  let s = input;
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  // A trailing dotted quad (::ffff:1.2.3.4) stands for the last two hextets.
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.', lastColon)) {
    const v4 = parseV4(s.slice(lastColon + 1));
    if (!v4) return null;
    tail = [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
    s = s.slice(0, lastColon + 1);
    if (!s.endsWith('::')) s = s.slice(0, -1);
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const head = hextets(halves[0]!);
  const rest = halves.length === 2 ? hextets(halves[1]!) : [];
  if (!head || !rest) return null;
  const missing = 8 - head.length - rest.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  return [...head, ...new Array<number>(missing).fill(0), ...rest, ...tail].flatMap((w) => [w >> 8, w & 0xff]);
}

/** The 16 bytes of an IPv4 or IPv6 address, or null when `s` is not one. */
export function parseIp(s: string): Uint8Array | null {
  const v = s.trim();
  if (v.includes(':')) {
    const b = parseV6(v.replace(/^\[(.*)\]$/, '$1'));
    return b ? Uint8Array.from(b) : null;
  }
  const v4 = parseV4(v);
  return v4 ? Uint8Array.from([...V4_MAPPED, ...v4]) : null;
}

function isV4Mapped(b: Uint8Array): boolean {
  return V4_MAPPED.every((x, i) => b[i] === x);
}

/** A canonical text form: dotted quad for IPv4 (also v4-mapped), else lower-case hex hextets. */
export function normalizeIp(s: string): string | null {
  const b = parseIp(s);
  if (!b) return null;
  if (isV4Mapped(b)) return Array.from(b.subarray(12)).join('.');
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((b[i]! << 8) | b[i + 1]!).toString(16));
  return words.join(':');
}

/** `a.b.c.d/n`, `x::y/n`, or a bare address (a single host); null when malformed. */
export function parseCidr(s: string): Cidr | null {
  const [addr, len, extra] = s.trim().split('/');
  if (addr === undefined || extra !== undefined) return null;
  const bytes = parseIp(addr);
  if (!bytes) return null;
  const v4 = !addr.includes(':');
  const max = v4 ? 32 : 128;
  if (len !== undefined && !/^\d{1,3}$/.test(len)) return null;
  const n = len === undefined ? max : Number(len);
  if (n > max) return null;
  return { bytes, prefix: v4 ? n + 96 : n };
}

export function cidrContains(cidr: Cidr, ip: Uint8Array): boolean {
  let bits = cidr.prefix;
  for (let i = 0; i < 16 && bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((cidr.bytes[i]! & mask) !== (ip[i]! & mask)) return false;
  }
  return true;
}

/** True when the address `ip` (text) is inside any of `cidrs`; false for a malformed address. */
export function ipInAny(ip: string, cidrs: readonly Cidr[]): boolean {
  const b = parseIp(ip);
  return b !== null && cidrs.some((c) => cidrContains(c, b));
}

/** Parses a list, returning the ranges and the entries that are not valid CIDRs. */
export function parseCidrList(list: readonly string[]): { cidrs: Cidr[]; invalid: string[] } {
  const cidrs: Cidr[] = [];
  const invalid: string[] = [];
  for (const entry of list) {
    const c = parseCidr(entry);
    if (c) cidrs.push(c);
    else invalid.push(entry);
  }
  return { cidrs, invalid };
}
