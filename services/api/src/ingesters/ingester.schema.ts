import { PROVIDERS } from '@hookline/signing';
import { createFlowBody } from '../flows/flow.schema';
import type { JsonSchema } from '../http/validate';

const secret = { type: 'string', minLength: 8, maxLength: 1024 };

/** Provider settings; unknown keys are kept (provider-specific, non-secret). */
const ingesterConfig = {
  type: 'object',
  properties: {
    signing_secret: { ...secret, description: 'Write-only; replaces the current secrets. A PUT that changes provider must send it (or signing_secrets) again when secrets are stored' },
    signing_secrets: { type: 'array', items: secret, minItems: 1, maxItems: 2, description: 'Write-only; [current, previous] during rotation' },
    tolerance_seconds: { type: 'integer', minimum: 1, maximum: 86400 },
    event_type_path: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: "Where the event type is read in a JSON body: dotted names and array indexes only ($.data.kind, data.items[0].name, $['odd-key']); a path with wildcards, '..' or filters is refused (400 naming config.event_type_path)",
    },
    required_headers: {
      description:
        'header → expected value (null: must be present); a list of names means "must be present". Expected values are shared secrets: write-only, shown as "[redacted]"; a PUT that sends "[redacted]" back keeps the stored value.',
      anyOf: [
        { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 }, maxItems: 50 },
        { type: 'object', additionalProperties: { type: ['string', 'null'], maxLength: 1000 }, maxProperties: 50 },
      ],
    },
    ip_allowlist: {
      type: 'array',
      // Each entry is checked by the parser ingest enforces the list with (ip-allowlist.ts).
      items: { type: 'string', maxLength: 100, description: 'IPv4 or IPv6 address, or CIDR range (a.b.c.d/0-32, x::y/0-128); IPv4 octets 0-255 without leading zeros' },
      maxItems: 100,
      description:
        'Source IPs or CIDRs allowed to send; requests from any other address are refused (403). Setting or changing it needs the Pro plan or above. A stored allowlist keeps being enforced whatever the plan (it never fails open after a downgrade); it can always be removed, and a PUT that sends it unchanged needs no plan.',
    },
    dedicated_ip: { type: 'boolean', description: 'Receive on a dedicated IP (Business plan and above)' },
    twilio_url_suffixes: {
      type: 'array',
      items: { type: 'string', maxLength: 512, pattern: '^$|^[/?]', description: 'Path and/or query after /in/<id>, exactly as given to Twilio: "" (the bare hook URL), "/sms", "/voice?lang=en"' },
      minItems: 1,
      maxItems: 20,
      description:
        'Twilio only: the URLs (as suffixes after the hook URL) this ingester was given to Twilio as; default [""], the hook URL itself. A Twilio request posted to any other suffix is refused (401, signature_mismatch): Twilio signs the URL and the form parameters without separators, so a signature could otherwise be replayed with signed parameters moved into the URL. The bodySHA256 query parameter Twilio appends for JSON bodies is not part of the suffix.',
    },
  },
  additionalProperties: true,
} as const;

const FILTERS_DESCRIPTION =
  "Event filters, in a delivery flow's filter format and checked the same way (400 naming filters.… fields): { event_types?: string[], jsonpath?: string | string[], match?: operator tree } over the event's type, headers, query and body. " +
  "Applied by the router ahead of every flow of this ingester: an event they reject is routed to none of its flows (status filtered, status_reason ingester_filter_rejected); one they accept goes on to each flow's own filter. " +
  '{} matches every event; null removes them (a PUT that leaves filters out keeps the stored ones).';

/** A flow's `filter` schema (flow.schema.ts), nullable: the same format, the same checks (validateFilter in ingester.service.ts). */
const ingesterFilters = { ...(createFlowBody['properties'] as Record<string, JsonSchema>)['filter'], type: ['object', 'null'], description: FILTERS_DESCRIPTION };

const fields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  provider: { type: 'string', enum: [...PROVIDERS] },
  type: { type: 'string', enum: [...PROVIDERS], description: 'Alias of provider' },
  cluster_id: { type: ['string', 'null'], maxLength: 64 },
  config: ingesterConfig,
  filters: ingesterFilters,
};

export const createIngesterBody: JsonSchema = {
  type: 'object',
  required: ['name'],
  properties: { ...fields, state: { type: 'string', enum: ['DRAFT', 'ACTIVE'], description: 'Default ACTIVE; DRAFT waits for apply' } },
  additionalProperties: false,
};

/**
 * PUT replaces name, provider and config; secrets are kept unless new ones are sent. A
 * provider change needs them sent again (ingester.service.ts prepare()). filters, like
 * cluster_id, are kept when left out (null removes them).
 */
export const updateIngesterBody: JsonSchema = { type: 'object', required: ['name'], properties: fields, additionalProperties: false };

export interface IngesterConfigInput {
  signing_secret?: string;
  signing_secrets?: string[];
  ip_allowlist?: string[];
  event_type_path?: string;
  required_headers?: string[] | Record<string, string | null>;
  dedicated_ip?: boolean;
  twilio_url_suffixes?: string[];
  [k: string]: unknown;
}

export interface IngesterBody {
  name: string;
  provider?: string;
  type?: string;
  cluster_id?: string | null;
  config?: IngesterConfigInput;
  /** A flow filter ({event_types?, jsonpath?, match?}); null removes it. */
  filters?: Record<string, unknown> | null;
  state?: 'DRAFT' | 'ACTIVE';
}

export const ingesterView: JsonSchema = {
  type: 'object',
  required: ['id', 'tenant_id', 'name', 'provider', 'state', 'hook_url', 'config', 'filters', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string', pattern: '^ing_' },
    tenant_id: { type: 'string' },
    cluster_id: { type: ['string', 'null'] },
    name: { type: 'string' },
    provider: { type: 'string' },
    state: { type: 'string', enum: ['DRAFT', 'ACTIVE', 'DISABLED', 'DELETED'] },
    hook_url: { type: 'string' },
    config: {
      type: 'object',
      description:
        'Provider settings. Secrets are never returned: signing secrets only as signing_secret_set/secrets_count, required_headers values as "[redacted]" (null stays null). ip_allowlist, when set, is enforced whatever the current plan.',
      required: ['signing_secret_set', 'secrets_count'],
      properties: { signing_secret_set: { type: 'boolean' }, secrets_count: { type: 'integer' } },
      not: { anyOf: [{ required: ['signing_secret'] }, { required: ['signing_secrets'] }] },
    },
    filters: { type: ['object', 'null'], description: "The ingester's event filters as stored (a flow filter, applied ahead of its flows); null when none" },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
};
