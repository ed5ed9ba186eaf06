import type { ErrorKind } from './send-result';

const TIMEOUT = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT', 'ABORT_ERR']);
const DNS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);
const RESET = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|EPROTO)/;

interface ErrLike {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
}

/** The error and its causes, outermost first (undici wraps socket errors). */
function chain(err: unknown): ErrLike[] {
  const out: ErrLike[] = [];
  let e: unknown = err;
  while (e && typeof e === 'object' && out.length < 5) {
    out.push(e as ErrLike);
    e = (e as ErrLike).cause;
  }
  return out;
}

/** Maps a failed request to an error kind; `timedOut` is true when our own deadline fired. */
export function errorKindOf(err: unknown, timedOut: boolean): ErrorKind {
  const codes = chain(err).map((e) => String(e.code ?? ''));
  const text = chain(err).map((e) => String(e.message ?? '')).join(' ');
  if (codes.includes('ERR_SSRF_BLOCKED')) return 'ssrf_blocked';
  if (timedOut || codes.some((c) => TIMEOUT.has(c))) return 'timeout';
  if (codes.some((c) => DNS.has(c))) return 'dns';
  if (codes.some((c) => TLS_CODE.test(c)) || /\b(ssl|tls|certificate)\b/i.test(text)) return 'tls';
  if (codes.includes('ECONNREFUSED')) return 'refused';
  if (codes.some((c) => RESET.has(c))) return 'reset';
  return 'connect';
}

/** A short message for the attempt row: the error and its first cause. */
export function errorMessage(err: unknown): string {
  const parts = chain(err)
    .slice(0, 2)
    .map((e) => String(e.message ?? e.code ?? 'error'));
  return parts.join(': ').slice(0, 500);
}
