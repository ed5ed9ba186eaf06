import { randomIdString } from '@hookline/signing';

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}/;

/** The trace id of a W3C `traceparent` (so a caller's trace runs through), else a fresh one. */
export function correlationId(traceparent: string | string[] | undefined): string {
  const v = Array.isArray(traceparent) ? traceparent[0] : traceparent;
  const m = v ? TRACEPARENT.exec(v.trim().toLowerCase()) : null;
  if (m && m[1] !== '0'.repeat(32)) return m[1]!;
  return randomIdString(16, 'hex');
}
