import { AppError } from '@hookline/errors';

/**
 * The new key's expiry: `expires_at` (an RFC 3339 date-time the validator let through but
 * Date cannot read, e.g. an offset without minutes or a leap second, is a 400), in the
 * future; never later than an expiring creator's own (a key cannot mint one that outlives
 * it: without `expires_at` it inherits the creator's). For API keys and MCP keys alike, made
 * by an API key or an MCP key; a session user's keys are not capped.
 */
export function keyExpiry(given: string | undefined, creatorExpiry: Date | null): Date | null {
  const expiresAt = given === undefined ? creatorExpiry : new Date(given);
  if (expiresAt && Number.isNaN(expiresAt.getTime())) throw AppError.validation([{ field: 'expires_at', message: 'must be a date-time with seconds 00-59 and an offset ±hh:mm or Z' }]);
  const refuse = (message: string): never => {
    throw new AppError('unprocessable-entity', `expires_at ${message}.`, { errors: [{ field: 'expires_at', message }] });
  };
  if (expiresAt && expiresAt.getTime() <= Date.now()) refuse('must be in the future');
  if (creatorExpiry && expiresAt && expiresAt.getTime() > creatorExpiry.getTime()) refuse(`must not be later than the creating key's own expiry (${creatorExpiry.toISOString()})`);
  return expiresAt;
}
