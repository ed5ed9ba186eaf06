/** What a filter sees of an event; JSONPath (`$.body.x`) and match keys (`body.x`) start here. */
export interface FilterDocument {
  type: string | null;
  source: { ingester_id: string; provider: string };
  /** Header names in lower case. */
  headers: Record<string, string>;
  query: Record<string, string | string[]>;
  /** Parsed JSON (or form fields), null when the body is neither. */
  body: unknown;
}

/** Stored in delivery_flows.filter. Empty object = every event matches; all present parts must match. */
export interface FlowFilter {
  event_types?: string[];
  jsonpath?: string | string[];
  match?: unknown;
}
