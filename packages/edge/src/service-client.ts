import { randomBytes } from 'node:crypto';
import { signServiceRequest } from '@hookline/signing';
import { Agent, request } from 'undici';

export interface ServiceClientOptions {
  baseUrl: string;
  clusterKey: string;
  agentId: string;
  agentVersion: string;
  /** mTLS towards the service (PEM); the CA replaces the system ones when given. */
  tls?: { cert?: string; key?: string; ca?: string };
}

/** The service answered with an error, or could not be reached (`status` null). */
export class ServiceError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'ServiceError';
  }

  /** 4xx other than 401 and 429: repeating the same request will not help. */
  get permanent(): boolean {
    return this.status !== null && this.status >= 400 && this.status < 500 && this.status !== 401 && this.status !== 429;
  }
}

export interface ServiceClient {
  /** A signed POST of `payload` (plus agent id, version and a nonce); resolves with the JSON answer. */
  post<T>(path: string, payload: object, opts?: { signal?: AbortSignal; timeoutMs?: number }): Promise<T>;
  close(): Promise<void>;
}

/**
 * The agent's only connection: outbound, to the service. Every request is signed with the
 * cluster key over `<t>.<raw body>`; the body carries a nonce so no signature repeats.
 */
export function createServiceClient(o: ServiceClientOptions): ServiceClient {
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connect: { ...o.tls } });
  const base = o.baseUrl.replace(/\/+$/, '');
  return {
    async post<T>(path: string, payload: object, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<T> {
      const body = JSON.stringify({ ...payload, agent_id: o.agentId, agent_version: o.agentVersion, nonce: randomBytes(12).toString('hex') });
      const timeout = opts.timeoutMs ?? 30_000;
      let res;
      try {
        res = await request(`${base}${path}`, {
          dispatcher,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': `hookline-edge/${o.agentVersion}`, ...signServiceRequest(o.clusterKey, body) },
          body,
          signal: opts.signal,
          headersTimeout: timeout,
          bodyTimeout: timeout,
        });
      } catch (err) {
        throw new ServiceError(`service unreachable: ${(err as Error).message}`, null);
      }
      const text = await res.body.text().catch(() => '');
      if (res.statusCode !== 200) {
        // A problem's title and detail only: they never carry delivery data.
        const p = (() => {
          try {
            return JSON.parse(text) as { title?: string; detail?: string };
          } catch {
            return {};
          }
        })();
        throw new ServiceError(`service answered ${res.statusCode}: ${p.detail ?? p.title ?? ''}`.trim(), res.statusCode);
      }
      return JSON.parse(text) as T;
    },
    close: () => dispatcher.close(),
  };
}
