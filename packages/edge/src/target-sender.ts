import { errorKindOf, errorMessage, pickHeaders, readLimited, type AttemptReport, type WorkItem } from '@hookline/delivery/src/wire';
import { Agent, request } from 'undici';
import type { TargetGuard } from './target-guard';

export interface TargetSender {
  /**
   * Sends one leased delivery to its private target; never throws: failures are reports.
   * When `stop` aborts before the target's answer began (or before the send started),
   * the send is abandoned and resolves null: no attempt to report, the lease is to be
   * given back. An answer that began is read and reported as usual.
   */
  send(item: WorkItem, responseBodyLimit: number, stop?: AbortSignal): Promise<AttemptReport | null>;
  close(): Promise<void>;
}

export interface TargetSenderOptions {
  /** What the agent may connect to (EDGE_ALLOWED_TARGETS, EDGE_DENY_LINK_LOCAL). */
  guard: TargetGuard;
  /** false (EDGE_SEND_RESPONSE_BODY): answers' bodies are never read into a report. */
  sendResponseBody?: boolean;
  /**
   * The service's time (ms epoch) as the agent knows it: ServiceClient.now, this host's clock
   * corrected by the skew learnt from the service's `Date` (what signs requests and reads
   * leases). A report's `started_at` is stamped with it: the service refuses one outside its
   * window, which a host clock minutes off would leave. Default: this host's clock.
   */
  now?: () => number;
}

/**
 * POSTs the exact bytes with the exact headers the service prepared (signatures and
 * idempotency key included). The agent reaches private addresses (its purpose), within the
 * guard: a target it refuses (a URL address here, a resolved one in the socket's lookup) is
 * a failed attempt of kind `ssrf_blocked`, with nothing sent. Redirects are not followed (a
 * 3xx is a failed attempt).
 */
export function createTargetSender(opts: TargetSenderOptions): TargetSender {
  const dispatcher = new Agent({ keepAliveTimeout: 4_000, keepAliveMaxTimeout: 60_000, connect: { lookup: opts.guard.lookup } });
  const now = opts.now ?? ((): number => Date.now());
  return {
    async send(item, limit, stop) {
      if (stop?.aborted) return null;
      const startedAt = new Date(now());
      const t0 = performance.now();
      const base = { delivery_id: item.id, lease_owner: item.lease_owner, started_at: startedAt.toISOString() };
      // A URL host that is an address is connected to without a lookup: checked here.
      const refused = opts.guard.checkUrl(item.url);
      if (refused) return { ...base, status_code: null, response_body: null, response_headers: null, error_kind: 'ssrf_blocked', error: refused.message, duration_ms: 0 };
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), item.timeout_ms);
      // The stop cuts the send only while no answer has begun (and not once its own timeout did).
      let answered = false;
      let stopped = false;
      const onStop = (): void => {
        if (answered || abort.signal.aborted) return;
        stopped = true;
        abort.abort();
      };
      stop?.addEventListener('abort', onStop, { once: true });
      try {
        const res = await request(item.url, {
          dispatcher,
          method: item.method as 'POST',
          headers: item.headers,
          body: Buffer.from(item.body_base64, 'base64'),
          signal: abort.signal,
          headersTimeout: item.timeout_ms,
          bodyTimeout: item.timeout_ms,
        });
        answered = true;
        const s = res.statusCode;
        // undici takes any three digits; the service records 100-599 only and refuses a
        // report with another, which would leave the delivery to go out again for ever.
        if (s > 599) {
          await res.body.dump().catch(() => undefined);
          return { ...base, status_code: null, response_body: null, response_headers: null, error_kind: 'connect', error: `invalid HTTP status ${s}`, duration_ms: Math.round(performance.now() - t0) };
        }
        const responseBody = opts.sendResponseBody === false ? await res.body.dump().then(() => null, () => null) : await readLimited(res.body, limit);
        const ok = s >= 200 && s < 300;
        return {
          ...base,
          status_code: s,
          response_body: responseBody,
          response_headers: pickHeaders(res.headers),
          error_kind: ok ? null : s >= 300 && s < 400 ? 'redirect' : 'http_error',
          error: ok ? null : `HTTP ${s}`,
          duration_ms: Math.round(performance.now() - t0),
        };
      } catch (err) {
        if (stopped) return null;
        const timedOut = abort.signal.aborted;
        return {
          ...base,
          status_code: null,
          response_body: null,
          response_headers: null,
          error_kind: errorKindOf(err, timedOut),
          error: timedOut ? `no answer within ${item.timeout_ms} ms` : errorMessage(err),
          duration_ms: Math.round(performance.now() - t0),
        };
      } finally {
        clearTimeout(timer);
        stop?.removeEventListener('abort', onStop);
      }
    },
    close: () => dispatcher.close(),
  };
}
