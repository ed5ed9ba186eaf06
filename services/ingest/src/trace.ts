import { parseTraceparent } from '@hookline/observability';
import { randomIdString } from '@hookline/signing';

/**
 * The trace id of a valid W3C `traceparent` (so a caller's trace runs through), else a
 * fresh one: the same parser as the services' tracing, which ignores what W3C says to
 * ignore (upper-case hex, all-zero ids, version ff, trailing data on version 00).
 */
export function correlationId(traceparent: string | string[] | undefined): string {
  return parseTraceparent(traceparent)?.traceId ?? randomIdString(16, 'hex');
}
