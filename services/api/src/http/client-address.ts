import type { Request } from 'express';
import { normalizeIp } from '@hookline/http';

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
  // Dotted quad for IPv4 (also v4-mapped), else the eight hextets written out.
  const ip = normalizeIp(address);
  if (!ip) return address;
  return ip.includes(':') ? `${ip.split(':').slice(0, 4).join(':')}::/64` : ip;
}
