// The target policy (target-policy.ts) applied where the agent connects: to a URL host that
// is an address before the request, and to a name's resolved addresses in the socket's own
// lookup, so the addresses checked are the ones connected to (no second, rebound answer).
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { normalizeHost, refusalOf, type TargetPolicy, type TargetRefusal } from './target-policy';

const WHY: Record<TargetRefusal, string> = {
  link_local: 'a link-local or cloud metadata address (EDGE_DENY_LINK_LOCAL)',
  not_allowed: 'not in EDGE_ALLOWED_TARGETS',
};

/**
 * A target the agent will not connect to. `code` makes it an `ssrf_blocked` attempt
 * (errorKindOf in @hookline/delivery). The message, which goes back to the service, names
 * the host and the rule, not a resolved address (that stays in the agent's log).
 */
export class TargetRefusedError extends Error {
  readonly code = 'ERR_SSRF_BLOCKED';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly reason: TargetRefusal,
  ) {
    super(`target ${host} refused by the edge agent: ${WHY[reason]}`);
    this.name = 'TargetRefusedError';
  }
}

export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export interface TargetGuard {
  /** A refusal for a URL whose host is an IP address (no lookup happens for those); null otherwise. */
  checkUrl(url: string): TargetRefusedError | null;
  /**
   * For undici's `connect.lookup`: resolves the name once and hands the socket only the
   * addresses the policy allows; none left is a refusal.
   */
  lookup: LookupFunction;
}

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export function createTargetGuard(policy: TargetPolicy, opts: { resolver?: Resolver; onRefused?: (err: TargetRefusedError) => void } = {}): TargetGuard {
  const resolver = opts.resolver ?? systemResolver;
  const refusal = (host: string, address: string): TargetRefusedError | null => {
    const reason = refusalOf(policy, host, address);
    if (!reason) return null;
    const err = new TargetRefusedError(normalizeHost(host), address, reason);
    opts.onRefused?.(err);
    return err;
  };
  return {
    checkUrl(url) {
      if (!URL.canParse(url)) return null;
      const host = normalizeHost(new URL(url).hostname);
      return isIP(host) ? refusal(host, host) : null;
    },
    lookup(hostname, options, callback) {
      resolver(hostname)
        .then((all) => {
          const family = typeof options.family === 'number' && options.family !== 0 ? options.family : null;
          const found = all.filter((a) => family === null || a.family === family);
          if (found.length === 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
          // Refused addresses are left out; the socket never sees them.
          const refusals = found.map((a) => refusal(hostname, a.address));
          const usable = found.filter((_, i) => refusals[i] === null);
          const first = usable[0];
          if (!first) throw refusals[0]!;
          if (options.all) callback(null, usable);
          else callback(null, first.address, first.family);
        })
        .catch((err: NodeJS.ErrnoException) => callback(err, '', 0));
    },
  };
}
