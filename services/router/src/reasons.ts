/**
 * `events.status_reason` values the router writes when an event ends `filtered` without
 * any delivery. An event that produced deliveries is `filtered` with no reason.
 */
export const FILTER_REASONS = {
  /** The ingester has no ACTIVE flow to an ACTIVE destination. */
  noMatchingFlow: 'no_matching_flow',
  /** Active flows exist, but the filter of every one of them rejected the event. */
  filterRejected: 'filter_rejected',
} as const;

export type FilterReason = (typeof FILTER_REASONS)[keyof typeof FILTER_REASONS];
