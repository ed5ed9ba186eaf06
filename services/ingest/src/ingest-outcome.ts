import { AppError } from '@hookline/errors';

/**
 * The `outcome` label of hookline_events_ingested_total (docs/deployment.md). `duplicate` is
 * a repeat of a live dedup key: answered with the original 202 plus `Idempotent-Replayed:
 * true`, so only this label (and that header) tells it apart from `accepted`.
 */
export type IngestOutcome = 'accepted' | 'duplicate' | 'rejected_signature' | 'rejected_ip' | 'rejected_size' | 'rejected_other' | 'error';

/** What a refused or failed request counts as: refusals by their reason, anything else `error`. */
export function outcomeOfError(err: unknown): IngestOutcome {
  if (!(err instanceof AppError)) return 'error';
  switch (err.type) {
    case 'unauthorized':
      return 'rejected_signature';
    case 'permission-denied':
      return 'rejected_ip';
    case 'payload-too-large':
      return 'rejected_size';
    case 'service-unavailable':
      return 'error';
    default:
      return 'rejected_other';
  }
}
