import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderContext } from '../providers';

/**
 * A provider context for unit tests: header names lower-cased, as node:http gives them. The
 * hook suffix is what follows `/in/<id>` in `url` ('' for a URL without one); Twilio's
 * configured suffixes default to [''], the bare hook URL, as an ingester's do.
 */
export function providerCtx(opts: {
  body: string | Buffer;
  headers?: Record<string, string>;
  secrets: string[];
  url?: string;
  twilioUrlSuffixes?: string[];
  nowSeconds?: number;
  toleranceSeconds?: number;
  ingesterId?: string;
  logger?: ProviderContext['logger'];
}): ProviderContext {
  const body = Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body);
  const url = opts.url ?? 'https://hooks.example.test/in/ing_test';
  const headers: IncomingHttpHeaders = {};
  for (const [k, v] of Object.entries(opts.headers ?? {})) headers[k.toLowerCase()] = v;
  return {
    body,
    headers,
    secrets: opts.secrets,
    toleranceSeconds: opts.toleranceSeconds ?? 300,
    nowSeconds: opts.nowSeconds ?? Math.floor(Date.now() / 1000),
    url,
    hookSuffix: /^https?:\/\/[^/?#]+\/in\/[A-Za-z0-9_-]+((?:[/?].*)?)$/s.exec(url)?.[1] ?? '',
    twilioUrlSuffixes: opts.twilioUrlSuffixes ?? [''],
    ingesterId: opts.ingesterId ?? 'ing_test',
    logger: opts.logger ?? { warn: () => undefined },
    bodySha256: () => createHash('sha256').update(body).digest('hex'),
    json() {
      try {
        return JSON.parse(body.toString('utf8')) as unknown;
      } catch {
        return undefined;
      }
    },
  };
}

/** Flips one byte of the body: what tampering in transit looks like. */
export function tamper(body: string): string {
  return body.length === 0 ? 'x' : String.fromCharCode(body.charCodeAt(0) ^ 1) + body.slice(1);
}
