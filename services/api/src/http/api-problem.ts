import { AppError, toProblem, type ProblemDetails } from '@hookline/errors';
import { isDbUnreachable } from '@hookline/db';

/** Seconds a client is asked to wait after the database could not be reached. */
const DB_UNAVAILABLE_RETRY_AFTER_S = 2;

/**
 * A database that cannot be reached (down, starting, out of connections) or that rolled the
 * request's transaction back whole (a deadlock victim) is the service's temporary state,
 * not a fault of the request, and nothing was applied: 503 service-unavailable with
 * Retry-After (SPEC: "temporarily unavailable", retried after the wait), not 500. A
 * connection lost mid-statement stays a 500: a write's COMMIT may have landed before the
 * reply was lost, and a client told to retry could apply it twice (isDbUnreachable).
 * Everything else unchanged.
 */
export function asServiceError(err: unknown): unknown {
  if (err instanceof AppError || !isDbUnreachable(err)) return err;
  return new AppError('service-unavailable', 'The database is temporarily unavailable. Retry after the time in Retry-After.', {}, { 'Retry-After': String(DB_UNAVAILABLE_RETRY_AFTER_S) });
}

/** The HTTP status the api answers `err` with (asServiceError's mapping; 500 for anything not an AppError). */
export function errorStatus(err: unknown): number {
  const mapped = asServiceError(err);
  return mapped instanceof AppError ? mapped.status : 500;
}

/** Problem details for any error the api answers (toProblem after asServiceError). */
export function apiProblem(err: unknown, requestId: string): { problem: ProblemDetails; headers: Record<string, string> } {
  return toProblem(asServiceError(err), requestId);
}
