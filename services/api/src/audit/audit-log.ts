import { maskUrlCredentials } from '../destinations/url-credentials';
import { MAX_BODY_DEPTH } from '../http/storable-request';
import { REDACTED } from '../ingesters/secret-config-keys';
import { isSecretLookingKey } from '@hookline/logger';

// Secret-looking keys (lib/secret-keys.ts, the rule that refuses them in config) are replaced
// at any depth; headers, header rules and mTLS blocks keep their names only, whatever their
// shape (a map, a list of names, a list of {name, value}; nulls, "must be present", kept);
// a payload `body` of any type becomes its size; URLs lose their userinfo credential
// (https://user:****@host/…, as destination views show them). Refused requests are audited
// too, so nothing here relies on the body having passed validation.
const MAX_DEPTH = MAX_BODY_DEPTH;
const NAMES_ONLY = new Set(['headers', 'required_headers', 'mtls']);
// A header name (RFC 9110 token): kept in a list of names; any other text is redacted.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]{1,200}$/i;

const nameOrRedacted = (v: unknown): unknown => (v === null ? null : typeof v === 'string' && HEADER_NAME.test(v) ? v : REDACTED);

/** A map's names with its values redacted; in a list, the `name` of a {name, value} entry is kept. */
function namesOnly(value: unknown, inList = false): unknown {
  if (value === null) return null;
  if (Array.isArray(value)) return inList ? REDACTED : value.map((v) => (v !== null && typeof v === 'object' ? namesOnly(v, true) : nameOrRedacted(v)));
  if (typeof value !== 'object') return nameOrRedacted(value);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inList && k === 'name' ? nameOrRedacted(v) : v === null ? null : REDACTED]));
}

function sizeOf(value: unknown): string {
  return `[${Buffer.byteLength(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''))} bytes]`;
}

/** `params` as audited. At the top, `body` is the request's body (an object) and is looked into; any other `body` is a payload. */
export function redactParams(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return maskUrlCredentials(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth > MAX_DEPTH) return '[truncated]';
  if (Array.isArray(value)) return value.map((v) => redactParams(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (isSecretLookingKey(k)) out[k] = v === null ? null : REDACTED;
    else if (NAMES_ONLY.has(k)) out[k] = namesOnly(v);
    else if (k === 'body' && v !== null && (depth > 0 || typeof v !== 'object')) out[k] = sizeOf(v);
    else out[k] = redactParams(v, depth + 1);
  }
  return out;
}

export type AuditOutcome = 'success' | 'client_error' | 'server_error';

export function outcomeOf(status: number): AuditOutcome {
  return status < 400 ? 'success' : status < 500 ? 'client_error' : 'server_error';
}
