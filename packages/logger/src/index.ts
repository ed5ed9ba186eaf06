import winston from 'winston';
import { isSecretLookingKey } from './secret-names';

export { isCredentialHeader, isCredentialQueryName, isSecretLookingKey } from './secret-names';

export type Logger = winston.Logger;

// Keys whose values never reach a log line, at any depth, however they are spelled: every
// credential name (secret-names.ts: `authorization`, `x-api-key`, `clusterKey`, `SECRETS_KEY`,
// `client_secret`, `access_token`, `x-hub-signature-256`, …, the same words the api refuses
// in configs and hides in views) and payload bodies.
// Names run together without separators (`clientsecret`, `authtoken`, `signingkey`,
// `x-signature256`) are read as their words by secret-names.ts too; logs also hide these
// endings whatever comes before them: a log line may hide more than the api refuses, never less.
const BODY = /^(?:raw|body|payload|(?:raw|request|response)[-_]?body|body[-_]?base64)$/i;
const RUN_TOGETHER = /(?:secret|token|passw(?:or)?d|signature(?:[-_]?\d+)?|hmac(?:[-_]?sha\d+)?|(?:api|private|signing|hmac|cluster|secrets|evidence|access|client|session|encryption|master)[-_]?key)$/i;
// Log field names are few and fixed, and judging one reads it word by word: each answer is
// kept (at most 2,048 names; past that the map starts again).
const judged = new Map<string, boolean>();
function redacted(key: string): boolean {
  let secret = judged.get(key);
  if (secret === undefined) {
    secret = BODY.test(key) || RUN_TOGETHER.test(key) || isSecretLookingKey(key);
    if (judged.size >= 2_048) judged.clear();
    judged.set(key, secret);
  }
  return secret;
}

// Credentials inside text (an error quoting a connection string or a request):
// `scheme://user:password@host` and `scheme://token@host` (the whole userinfo, up to the
// authority's last `@`, so `u:p@ss@host` leaves nothing behind), and `Bearer …` / `Basic …`.
const CREDENTIALS_IN_TEXT = /(\/\/)[^/\s?#]*@|\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi;

/** `text` with any credentials it quotes replaced. */
export function scrubText(text: string): string {
  return text.replace(CREDENTIALS_IN_TEXT, (_m, slashes: string | undefined, scheme: string | undefined) => (slashes ? `${slashes}[redacted]@` : `${scheme} [redacted]`));
}

// Fields that hold error text: the ones code fills with `err.message`.
const ERROR_TEXT = new Set(['message', 'stack', 'err', 'error', 'reason', 'detail']);

const MAX_DEPTH = 6;

/** An error as a plain object: name, message and stack (scrubbed), its own fields and its cause, redacted. */
function redactError(err: Error, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = { name: err.name, message: scrubText(String(err.message)) };
  if (err.stack) out['stack'] = scrubText(err.stack);
  for (const [k, v] of Object.entries(err)) out[k] = redacted(k) ? '[redacted]' : redact(v, depth + 1, k);
  if (err.cause !== undefined) out['cause'] = redact(err.cause, depth + 1, 'cause');
  return out;
}

export function redact(value: unknown, depth = 0, key = ''): unknown {
  if (typeof value === 'string') return ERROR_TEXT.has(key) ? scrubText(value) : value;
  if (value === null || typeof value !== 'object') return value;
  // Deeper than this is not looked into, so it is not written either.
  if (depth > MAX_DEPTH) return '[truncated]';
  if (Buffer.isBuffer(value) || ArrayBuffer.isView(value)) return '[bytes]';
  if (value instanceof Date) return value;
  if (value instanceof Error) return redactError(value, depth);
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = redacted(k) ? '[redacted]' : redact(v, depth + 1, k);
  }
  return out;
}

const redactFormat = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (redacted(key)) info[key] = '[redacted]';
    else if (typeof info[key] === 'object' || ERROR_TEXT.has(key)) info[key] = redact(info[key], 0, key);
  }
  return info;
});

/**
 * Structured JSON logger; use `.child({ request_id })` per request or job.
 *
 * Lines below the level are dropped before any formatting: winston runs the whole format
 * chain (redaction, timestamp, JSON) for every call and filters by level only at the
 * transport, so each skipped `debug` line was still serialized. At LOG_LEVEL=warn that
 * was ~3 % of the deliverer's CPU in the benchmark (one debug line per attempt).
 *
 * `errors` runs before the redaction: it turns a logged Error into plain fields (message,
 * stack) that the redaction then sees.
 */
export function createLogger(service: string, level = 'info'): Logger {
  const enabled = winston.format((info) => (logger.isLevelEnabled(info.level) ? info : false));
  const logger: Logger = winston.createLogger({
    level,
    defaultMeta: { service },
    format: winston.format.combine(enabled(), winston.format.errors({ stack: true }), redactFormat(), winston.format.timestamp(), winston.format.json()),
    transports: [new winston.transports.Console({ stderrLevels: ['error'] })],
  });
  return logger;
}
