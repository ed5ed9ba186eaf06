import { randomIdString } from '@hookline/signing';

/** A request id: the caller's `X-Request-Id` when it is sane, else a new `req_…`. */
export function requestId(incoming?: string | string[]): string {
  const v = Array.isArray(incoming) ? incoming[0] : incoming;
  if (v && /^[A-Za-z0-9._:-]{1,100}$/.test(v)) return v;
  return `req_${randomIdString(12, 'base64url')}`;
}
