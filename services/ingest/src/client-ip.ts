import { ipInAny, normalizeIp, type Cidr } from '@hookline/http';

/**
 * The address a request came from. Only when the socket peer is a trusted proxy is
 * `X-Forwarded-For` believed, and then only up to the right-most address that is not
 * itself a trusted proxy (everything left of it could have been written by the client).
 */
export function resolveClientIp(peer: string | undefined, forwardedFor: string | string[] | undefined, trusted: readonly Cidr[]): string | null {
  const direct = peer ? normalizeIp(peer) : null;
  if (!direct || trusted.length === 0 || !ipInAny(direct, trusted)) return direct;
  const header = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor;
  if (!header) return direct;
  let current = direct;
  const hops = header.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeIp(hops[i]!.trim());
    // A hop we cannot read ends the chain: the last address we could trust wins.
    if (!hop) return current;
    if (!ipInAny(hop, trusted)) return hop;
    current = hop;
  }
  return current;
}
