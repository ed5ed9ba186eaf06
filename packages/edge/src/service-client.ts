import { randomBytes } from 'node:crypto';
import { signServiceRequest } from '@hookline/signing';
import { parseRetryAfter as readRetryAfter } from '@hookline/delivery/src/retry-policy';
import { Agent, request } from 'undici';

export interface ServiceClientOptions {
  baseUrl: string;
  clusterKey: string;
  agentId: string;
  agentVersion: string;
  /** mTLS towards the service (PEM); the CA replaces the system ones when given. */
  tls?: { cert?: string; key?: string; ca?: string };
  /** This host's clock (ms epoch); tests skew it. */
  clock?: () => number;
}

/** The service answered with an error, or could not be reached (`status` null). */
export class ServiceError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    /** The service's `Retry-After`, in ms, when it sent one. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'ServiceError';
  }

  /** 4xx other than 401 and 429: repeating the same request will not help. */
  get permanent(): boolean {
    return this.status !== null && this.status >= 400 && this.status < 500 && this.status !== 401 && this.status !== 429;
  }
}

/** The longest `Retry-After` honoured: a larger one (or a far date) is cut to it. */
export const MAX_RETRY_AFTER_MS = 15 * 60_000;

/** `Retry-After` (the deliverer's reading: delta-seconds or an HTTP date, here against the service's clock) in ms, at most MAX_RETRY_AFTER_MS; null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, serviceNowMs: number): number | null {
  const ms = readRetryAfter(Array.isArray(value) ? value[0] : value, serviceNowMs);
  return ms === null ? null : Math.min(MAX_RETRY_AFTER_MS, ms);
}

// Clock differences this small are left alone: the service's `Date` has whole seconds and
// the signature window is minutes.
const SKEW_THRESHOLD_MS = 2_000;

export interface ServiceClient {
  /**
   * A signed POST of `payload` (plus agent id, version and a nonce); resolves with the JSON
   * answer. `signal` abandons the request until the service's answer begins; an answer that
   * began is read whole (a work response carries leases: dropped half-read, they would be
   * lost until they expire; whole, the agent can give them back).
   */
  post<T>(path: string, payload: object, opts?: { signal?: AbortSignal; timeoutMs?: number }): Promise<T>;
  /** The service's time as far as the agent can tell (ms epoch): this host's clock corrected by the skew seen in the service's `Date`. */
  now(): number;
  close(): Promise<void>;
}

/**
 * The agent's only connection: outbound, to the service. Every request is signed with the
 * cluster key over `<t>.<raw body>`; the body carries a nonce so no signature repeats.
 *
 * `t` is the service's time, not this host's: the skew is learnt from the `Date` of every
 * answer, so an agent whose clock is off by more than the signature window still gets in
 * (its first request is refused, the next one, sent at once, is signed right).
 */
export function createServiceClient(o: ServiceClientOptions): ServiceClient {
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connect: { ...o.tls } });
  const base = o.baseUrl.replace(/\/+$/, '');
  const clock = o.clock ?? Date.now;
  let skewMs = 0;

  /** Learns the skew from an answer's `Date` (stamped as its headers left); returns the service's time then. */
  const learn = (date: string | string[] | undefined, receivedAt: number): number => {
    const at = typeof date === 'string' ? Date.parse(date) : NaN;
    if (Number.isNaN(at)) return receivedAt + skewMs;
    const serviceNow = at + 500; // the header is truncated to the second
    const measured = serviceNow - receivedAt;
    skewMs = Math.abs(measured) > SKEW_THRESHOLD_MS ? Math.round(measured) : 0;
    return serviceNow;
  };

  return {
    async post<T>(path: string, payload: object, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<T> {
      const timeout = opts.timeoutMs ?? 30_000;
      for (let attempt = 1; ; attempt++) {
        const body = JSON.stringify({ ...payload, agent_id: o.agentId, agent_version: o.agentVersion, nonce: randomBytes(12).toString('hex') });
        const signedWith = skewMs;
        let res;
        const abandon = new AbortController();
        const onAbort = (): void => abandon.abort();
        if (opts.signal?.aborted) throw new ServiceError('request abandoned', null);
        opts.signal?.addEventListener('abort', onAbort, { once: true });
        try {
          res = await request(`${base}${path}`, {
            dispatcher,
            method: 'POST',
            headers: { 'content-type': 'application/json', 'user-agent': `hookline-edge/${o.agentVersion}`, ...signServiceRequest(o.clusterKey, body, Math.floor((clock() + skewMs) / 1000)) },
            body,
            signal: abandon.signal,
            headersTimeout: timeout,
            bodyTimeout: timeout,
          });
        } catch (err) {
          throw new ServiceError(`service unreachable: ${(err as Error).message}`, null);
        } finally {
          opts.signal?.removeEventListener('abort', onAbort);
        }
        const serviceNow = learn(res.headers['date'], clock());
        const text = await res.body.text().catch(() => '');
        // Refused, and the service's clock turned out to be far from the one we signed with: once more, signed right.
        if (res.statusCode === 401 && attempt === 1 && Math.abs(skewMs - signedWith) > SKEW_THRESHOLD_MS) continue;
        if (res.statusCode !== 200) {
          // A problem's title and detail only: they never carry delivery data.
          const p = (() => {
            try {
              return JSON.parse(text) as { title?: string; detail?: string };
            } catch {
              return {};
            }
          })();
          throw new ServiceError(`service answered ${res.statusCode}: ${p.detail ?? p.title ?? ''}`.trim(), res.statusCode, parseRetryAfter(res.headers['retry-after'], serviceNow));
        }
        try {
          return JSON.parse(text) as T;
        } catch {
          // JSON.parse's message quotes the text, which may be delivery data: never logged.
          throw new ServiceError('service answered 200 with a body that is not JSON', 200);
        }
      }
    },
    now: () => clock() + skewMs,
    close: () => dispatcher.close(),
  };
}
