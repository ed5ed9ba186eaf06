import { createHash } from 'node:crypto';
import { basicAuth, errorKindOf, errorMessage, pickHeaders, readLimited, type DestinationSettings, type SendResult } from '@hookline/delivery';
import { Pool } from 'undici';
import { boundedMemo } from './bounded-memo';
import { ConcurrencyLimits, type Shares } from './limiter';
import type { SsrfGuard } from './ssrf/ssrf-guard';
import { createTlsAlertTracker } from './tls-alerts';

export interface SendTarget {
  destinationId: string;
  /** The destination's tenant: its requests share the tenant's slots (DELIVERER_TENANT_MAX_SHARE). Unnamed, only the overall limit. */
  tenantId?: string;
  url: string;
  settings: DestinationSettings;
  /** Opened client key for mTLS (the PEM, never stored in plain text). */
  mtlsKey: string | null;
  /**
   * The signature headers, made when the request leaves, stamped with `nowMs` (that
   * instant): a request can wait for a concurrency slot (a slow destination's backlog) for
   * longer than a receiver's timestamp tolerance, so its signature must not be stamped
   * before that wait.
   */
  signHeaders?: (nowMs: number) => Record<string, string>;
}

/** What `sendWhenClear` did: sent (an attempt), or refused by the clearance (nothing sent). */
export type Cleared<R> = { sent: SendResult } | { refused: R };

export interface HttpSender {
  send(target: SendTarget, headers: Record<string, string>, body: Buffer): Promise<SendResult>;
  /**
   * `send`, once `clear` lets the request go: asked inside the request's destination slot,
   * after any wait for it, before it takes a tenant and an overall slot and leaves, with that instant
   * (ms epoch; the signature is stamped with the same). A non-null answer is a refusal:
   * nothing is sent, the slot is freed, and the answer is returned.
   */
  sendWhenClear<R>(target: SendTarget, headers: Record<string, string>, body: Buffer, clear: (nowMs: number) => Promise<R | null>): Promise<Cleared<R>>;
  close(): Promise<void>;
}

/** A destination URL, parsed once: what each request to it needs. */
interface ParsedUrl {
  url: URL;
  /** pathname + search, the request's path. */
  path: string;
  /** The Authorization header of the URL's userinfo, if any. */
  auth: Record<string, string>;
}

/** Destination URLs kept parsed (then the cache starts over). */
export const PARSED_URLS_MAX = 4096;

export interface HttpSenderOptions {
  guard: SsrfGuard;
  responseBodyLimit: number;
  maxInFlight: number;
  /**
   * Fractions of `maxInFlight` one destination and one tenant may hold
   * (DELIVERER_DESTINATION_MAX_SHARE, DELIVERER_TENANT_MAX_SHARE); none: no bound but
   * `max_concurrency` and `maxInFlight`.
   */
  shares?: Shares;
  /** Connection pools kept at most; the least recently used is closed beyond it. */
  maxPools?: number;
}

/**
 * undici `Pool`s (keep-alive, connection reuse) per destination and origin, bounded by
 * each destination's `max_concurrency` (at most its share of the overall limit), its
 * tenant's share and an overall in-flight limit (ConcurrencyLimits). Redirects are never
 * followed: a 3xx is a failed attempt of kind `redirect`.
 */
export function createHttpSender(opts: HttpSenderOptions): HttpSender {
  const pools = new Map<string, Pool>();
  const limits = new ConcurrencyLimits(opts.maxInFlight, opts.shares);
  const maxPools = opts.maxPools ?? 1000;
  const tlsAlerts = createTlsAlertTracker();
  // Parsing a destination URL (and its userinfo) for every request was a cost of its own in
  // the deliverer's profile; a destination's URL rarely changes. Invalid URLs throw, so
  // they are not kept.
  const parse = boundedMemo(PARSED_URLS_MAX, (raw): ParsedUrl => {
    const url = new URL(raw);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`unsupported scheme ${url.protocol}`);
    return { url, path: `${url.pathname}${url.search}`, auth: basicAuth(url) };
  });

  const poolFor = (t: SendTarget, url: URL): Pool => {
    const m = t.settings.mtls;
    const tlsId = m ? createHash('sha256').update(`${m.cert}|${m.keySealed}|${m.ca ?? ''}`).digest('hex').slice(0, 16) : '';
    const key = `${t.destinationId}|${url.origin}|${t.settings.maxConcurrency}|${tlsId}`;
    let pool = pools.get(key);
    if (pool) {
      pools.delete(key); // re-insert: the Map's order is the LRU order
    } else {
      const tls = { ...(m?.cert && t.mtlsKey ? { cert: m.cert, key: t.mtlsKey } : {}), ...(m?.ca ? { ca: m.ca } : {}) };
      pool = new Pool(url.origin, {
        connections: t.settings.maxConcurrency,
        keepAliveTimeout: 4_000,
        keepAliveMaxTimeout: 60_000,
        connect: tlsAlerts.connector({ lookup: opts.guard.lookup, timeout: Math.min(t.settings.timeoutMs, 10_000), ...tls }),
      });
    }
    pools.set(key, pool);
    if (pools.size > maxPools) {
      const [oldKey, old] = pools.entries().next().value as [string, Pool];
      pools.delete(oldKey);
      void old.close().catch(() => undefined);
    }
    return pool;
  };

  const attempt = async (t: SendTarget, headers: Record<string, string>, body: Buffer, now: number): Promise<SendResult> => {
    const startedAt = new Date();
    const t0 = performance.now();
    const done = (r: Omit<SendResult, 'startedAt' | 'durationMs'>): SendResult => ({ ...r, startedAt, durationMs: Math.round(performance.now() - t0) });
    const failure = (errorKind: SendResult['errorKind'], error: string): SendResult =>
      done({ statusCode: null, errorKind, error, responseBody: null, responseHeaders: null });

    let target: ParsedUrl;
    try {
      target = parse(t.url);
    } catch (err) {
      return failure('connect', `invalid destination URL: ${(err as Error).message}`);
    }
    const { url } = target;
    const blocked = opts.guard.checkHost(url.hostname);
    if (blocked) return failure('ssrf_blocked', blocked.message);

    const sent = t.signHeaders ? { ...headers, ...t.signHeaders(now) } : headers;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), t.settings.timeoutMs);
    try {
      const res = await poolFor(t, url).request({
        path: target.path,
        method: t.settings.method as 'POST',
        headers: target.auth.authorization === undefined ? sent : { ...target.auth, ...sent },
        body,
        signal: abort.signal,
        headersTimeout: t.settings.timeoutMs,
        bodyTimeout: t.settings.timeoutMs,
      });
      const responseBody = await readLimited(res.body, opts.responseBodyLimit);
      const s = res.statusCode;
      const errorKind = s >= 200 && s < 300 ? null : s >= 300 && s < 400 ? 'redirect' : 'http_error';
      return done({ statusCode: s, errorKind, error: errorKind ? `HTTP ${s}` : null, responseBody, responseHeaders: pickHeaders(res.headers) });
    } catch (caught) {
      const err = (url.protocol === 'https:' ? await tlsAlerts.alertFor(caught, Boolean(t.settings.mtls?.cert)) : null) ?? caught;
      return failure(errorKindOf(err, abort.signal.aborted), abort.signal.aborted ? `no answer within ${t.settings.timeoutMs} ms` : errorMessage(err));
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    send: (t, headers, body) => limits.run(t.destinationId, t.settings.maxConcurrency, () => attempt(t, headers, body, Date.now()), t.tenantId),
    // Cleared in the destination's slot, before a tenant's or an overall one is taken: the
    // clearance may wait on Redis (a rate token), and a stalled Redis must not hold the
    // slots other destinations need. The destination's slots are at most its share of the
    // overall limit, so a backlog waiting for them holds nothing shared either. The request
    // is stamped with the instant it was cleared (the second its rate token came from); it
    // leaves once a slot of its tenant and an overall one are free, at once unless its
    // tenant has its share out or DELIVERER_MAX_IN_FLIGHT requests are out.
    sendWhenClear: (t, headers, body, clear) =>
      limits.inDestination(t.destinationId, t.settings.maxConcurrency, async () => {
        const now = Date.now();
        const refused = await clear(now);
        return refused === null ? { sent: await limits.inOverall(() => attempt(t, headers, body, now), t.tenantId, t.destinationId) } : { refused };
      }),
    async close() {
      const all = [...pools.values()];
      pools.clear();
      await Promise.all(all.map((p) => p.close().catch(() => undefined)));
    },
  };
}
