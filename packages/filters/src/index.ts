// Flow filter rules: JSONPath expressions and Convoy/Hookdeck-style operator trees.
// The router evaluates them; the API validates them when a flow is saved.
// (Interface first; the router's owner implements it in this package.)
import type { FieldError } from '@hookline/errors';

/** What a filter sees of an event. */
export interface FilterDocument {
  type: string | null;
  source: { ingester_id: string; provider: string };
  headers: Record<string, string>;
  query: Record<string, string | string[]>;
  body: unknown;
}

/** Stored in delivery_flows.filter. Empty object = every event matches. */
export interface FlowFilter {
  event_types?: string[];
  jsonpath?: string | string[];
  match?: unknown;
}

export declare function validateFilter(filter: unknown, fieldPrefix?: string): FieldError[];
export declare function matchesFilter(filter: FlowFilter, doc: FilterDocument): boolean;
