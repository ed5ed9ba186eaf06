/**
 * The one error catalog (SPEC.md, Errors, Format A). Every error the services answer
 * with is one of these; the type URI is `${errorsBase}/${type}`.
 */
export const ERRORS = {
  'validation-error': { status: 400, title: 'Validation Error' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  'insufficient-scope': { status: 403, title: 'Insufficient Scope' },
  'permission-denied': { status: 403, title: 'Permission Denied' },
  'write-tool-disabled': { status: 403, title: 'Write Tool Disabled' },
  'plan-required': { status: 403, title: 'Plan Upgrade Required' },
  'not-found': { status: 404, title: 'Not Found' },
  'method-not-allowed': { status: 405, title: 'Method Not Allowed' },
  conflict: { status: 409, title: 'Conflict' },
  'idempotency-conflict': { status: 409, title: 'Idempotency Conflict' },
  // The first request with the key stopped before its outcome was recorded and may have been
  // applied: it is never run again under that key (services/api/src/limits/idempotency.ts).
  'idempotency-outcome-unknown': { status: 409, title: 'Idempotency Outcome Unknown' },
  'payload-too-large': { status: 413, title: 'Payload Too Large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported Media Type' },
  'unprocessable-entity': { status: 422, title: 'Unprocessable Entity' },
  'rate-limit-exceeded': { status: 429, title: 'Rate Limit Exceeded' },
  'internal-error': { status: 500, title: 'Internal Server Error' },
  'service-unavailable': { status: 503, title: 'Service Unavailable' },
} as const;

export type ErrorType = keyof typeof ERRORS;
