import { isIPv6 } from 'node:net';
import type { Request } from 'express';

/**
 * The client's address as express resolved it: the socket peer, or with TRUSTED_PROXIES
 * (`trust proxy`) the right-most X-Forwarded-For hop that is not a trusted proxy.
 */
export function clientAddress(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? 'unknown';
}

/**
 * What one client is counted as: an IPv4 address (also when written v4-mapped), or the /64
 * of an IPv6 address, since one subscriber usually holds a whole /64.
 */
export function addressBucket(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)?.[1];
  if (mapped) return mapped;
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.split('%')[0]!.split('::');
  const front = head ? head.split(':') : [];
  const back = tail ? tail.split(':') : [];
  // An embedded IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) fills two groups.
  const backGroups = back.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const groups = tail === undefined ? front : [...front, ...Array<string>(8 - front.length - backGroups).fill('0'), ...back];
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}
