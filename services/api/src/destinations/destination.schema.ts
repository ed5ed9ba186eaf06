import { HEADER_VALUE_PATTERN } from '@hookline/delivery';
import type { JsonSchema } from '../http/validate';
import { CREDENTIAL_NAMES } from '../lib/credential-headers';

const mtls = {
  type: ['object', 'null'],
  required: ['cert', 'key'],
  properties: {
    cert: {
      type: 'string',
      minLength: 1,
      maxLength: 20000,
      description:
        'PEM client certificate (chain): one or more -----BEGIN CERTIFICATE----- blocks that parse as X.509, and no other PEM block. Stored and shown in clear, as its certificate blocks only (text between them left out). A private key (a combined cert+key file), or any other block, is refused: 400 validation-error naming config.mtls.cert, and nothing is written',
    },
    key: { type: 'string', minLength: 1, maxLength: 20000, description: 'PEM private key; write-only, stored encrypted' },
    ca: { type: 'string', minLength: 1, maxLength: 50000, description: 'PEM CA bundle to trust: certificates only, checked, stored and shown as cert is (400 validation-error naming config.mtls.ca otherwise)' },
  },
  additionalProperties: false,
};

/** Delivery settings; unknown keys are kept for forward compatibility, except secret-looking ones. */
const destinationConfig = {
  type: 'object',
  properties: {
    headers: {
      type: 'object',
      additionalProperties: { type: 'string', maxLength: 4000, pattern: HEADER_VALUE_PATTERN },
      propertyNames: { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" },
      maxProperties: 50,
      description:
        'Extra request headers; hop-by-hop and Hookline-owned ones (webhook-*, x-service-*, x-hookline-*, content-type, user-agent, host, …) are refused. A value may hold tab, visible ASCII (0x20-0x7E) and U+0080-U+00FF (each sent as one byte); one holding any other character (a control character, DEL, or anything beyond U+00FF such as €) cannot be sent and is refused (400 validation-error naming config.headers.<Name>)',
    },
    timeout_ms: { type: 'integer', minimum: 100, maximum: 120000 },
    max_attempts: { type: 'integer', minimum: 1, maximum: 50 },
    retry_schedule_ms: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 604800000 }, minItems: 1, maxItems: 50 },
    retry_on_status: { type: 'array', items: { type: 'integer', minimum: 400, maximum: 499 }, maxItems: 100, description: '4xx statuses to retry, replacing the default [429] (every other 4xx is permanent); an empty list retries no 4xx. 5xx, 3xx and network errors are always retried; a Retry-After on a retried answer is honoured' },
    rate_limit_per_second: { type: 'integer', minimum: 1, maximum: 1000000 },
    max_concurrency: { type: 'integer', minimum: 1, maximum: 1000 },
    mtls,
  },
  additionalProperties: true,
  description:
    'Unknown keys are kept and shown as given, so keys that name a credential, at any depth (by words, a word run together with one of these read as the two, e.g. webhooksecret, authtoken: secret, password, credential, bearer, jwt, cookie anywhere; …_token, …_signature, …_auth, …_hmac at the end; key and <kind>_key except data keys such as idempotency_key: services/api/README.md, packages/logger/src/secret-names.ts) are refused, naming the path: send credentials as a config.headers entry (write-only) or in the URL userinfo. On PATCH, null removes such a key stored earlier.',
} as const;

const fields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  url: {
    type: 'string',
    minLength: 1,
    maxLength: 2000,
    pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
    description:
      'http(s) URL. Userinfo (https://user:password@host/…) is sent as HTTP Basic auth and is write-only: views show https://user:****@host/… (https://****@host/… when the user name is the only credential). The values of query parameters named as credentials (the credential-header rule, see config.headers, e.g. access_token, api_key, apitoken, hapikey, sid, sessionid; and code, an Azure Functions key) are write-only too: views show them as name=**** with the rest of the URL as given. Sending that masked URL back keeps the stored credentials if the origin and user are unchanged (for masked query values: if nothing else in the URL changed) and cluster_id does not change; otherwise, or on create, a URL carrying **** in a credential is refused. A PATCH changing cluster_id (onto an edge cluster, between clusters, or off one) must send url again with the credentials in clear, or without them, when the stored URL carries any.',
  },
  method: { type: 'string', enum: ['POST', 'PUT', 'PATCH'] },
  cluster_id: {
    type: ['string', 'null'],
    minLength: 1,
    maxLength: 64,
    description:
      "The edge cluster whose agents deliver to this destination (null: Hookline's own deliverer). A PATCH changing it is an origin change for stored credentials: each stored credential header and the URL password must be sent again in clear or removed (400 validation-error naming config.headers.<Name> and url otherwise).",
  },
  config: destinationConfig,
  signing_secret: {
    type: 'string',
    maxLength: 1024,
    description:
      'Write-only; generated (whsec_…) and returned once when omitted. A given secret must be a Standard Webhooks secret: whsec_ followed by standard base64 (padded) of 24 to 64 random bytes (the prefix may be left out); 400 validation-error naming signing_secret otherwise, and nothing is written',
  },
};

export const createDestinationBody: JsonSchema = {
  type: 'object',
  required: ['name', 'url'],
  properties: { ...fields, state: { type: 'string', enum: ['DRAFT', 'ACTIVE'], description: 'Default ACTIVE' } },
  additionalProperties: false,
};

/** PATCH: every field optional; config keys are merged; `rotate_signing_secret` mints a new secret (returned once). */
export const patchDestinationBody: JsonSchema = {
  type: 'object',
  properties: { ...fields, rotate_signing_secret: { type: 'boolean' } },
  additionalProperties: false,
  minProperties: 1,
};

export interface DestinationConfigInput {
  mtls?: { cert: string; key: string; ca?: string } | null;
  [k: string]: unknown;
}

export interface DestinationBody {
  name?: string;
  url?: string;
  method?: string;
  cluster_id?: string | null;
  config?: DestinationConfigInput;
  signing_secret?: string;
  rotate_signing_secret?: boolean;
  state?: 'DRAFT' | 'ACTIVE';
}

export const destinationView: JsonSchema = {
  type: 'object',
  required: ['id', 'tenant_id', 'name', 'url', 'method', 'state', 'config', 'signing_secrets_count', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string', pattern: '^dst_' },
    tenant_id: { type: 'string' },
    cluster_id: { type: ['string', 'null'] },
    name: { type: 'string' },
    url: { type: 'string', description: 'Credentials are masked, in the userinfo and in credential query values: https://user:****@host/path?access_token=****' },
    method: { type: 'string' },
    state: { type: 'string', enum: ['DRAFT', 'ACTIVE', 'DISABLED', 'DELETED'] },
    disabled_reason: { type: ['string', 'null'] },
    config: {
      type: 'object',
      description:
        `Delivery settings. Credential-bearing header values (${CREDENTIAL_NAMES}) are write-only and shown as "[redacted]"; a PATCH that sends "[redacted]" back keeps the stored value, unless it moves url to another origin (scheme, host or port) or changes cluster_id (onto an edge cluster, between clusters, or off one): then each must be sent again in clear or removed. A secret-looking key stored before such keys were refused is shown as "[redacted]". mtls.cert and mtls.ca show their certificate blocks only.`,
    },
    signing_secrets_count: { type: 'integer' },
    signing_secret: { type: 'string', description: 'Only in the create (or rotate) response' },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
};
