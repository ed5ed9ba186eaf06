/**
 * `events.status_reason` values the router writes when an event ends `filtered` without
 * any delivery. An event that produced deliveries is `filtered` with no reason.
 */
export const FILTER_REASONS = {
  /**
   * The ingester has no flow that routes (an ACTIVE flow to an ACTIVE or DISABLED
   * destination), and no switched-off one either.
   */
  noMatchingFlow: 'no_matching_flow',
  /**
   * The ingester's flows are all switched off (DRAFT or DISABLED, to a destination that
   * is not DELETED): the route exists, but is not ACTIVE.
   */
  flowNotActive: 'flow_not_active',
  /**
   * Flows that route exist, but the filter of every one of them rejected the event (a filter
   * over its budget, or an event whose filters spent their shared EVENT_STEP_BUDGET, counts
   * as rejecting: fail closed).
   */
  filterRejected: 'filter_rejected',
  /**
   * Flows that route exist, but the ingester's own filter (ingesters.filters) rejected the
   * event (or spent its budget), so none of them was tried.
   */
  ingesterFilterRejected: 'ingester_filter_rejected',
} as const;

export type FilterReason = (typeof FILTER_REASONS)[keyof typeof FILTER_REASONS];
