import { createHash } from 'node:crypto';
import { AppError } from '@hookline/errors';
import type { Logger } from '@hookline/logger';
import type { AppContext } from '../context';
import { addressBucket } from '../http/client-address';
import { admitAttempt, settleAttempt, type Attempt } from '../limits/failure-window';

/** What the login handler reports once the credential has been checked. */
export interface LoginGuard {
  /** Right credential: not a failure for the address, and the account starts afresh. */
  succeeded(): Promise<void>;
  /** Not decided (e.g. the database failed): the attempt is not held against anyone. */
  abandoned(): Promise<void>;
}

const noGuard: LoginGuard = { succeeded: async () => undefined, abandoned: async () => undefined };

/** The email as the login looks it up (trimmed, any case), hashed: no addresses in Redis. */
function accountKey(prefix: string, email: string): string {
  return `${prefix}:login-failures:account:${createHash('sha256').update(email.trim().toLowerCase()).digest('hex')}`;
}

function settle(redis: AppContext['redis'], logger: Logger, attempt: Attempt, change: Parameters<typeof settleAttempt>[2]): Promise<void> {
  return settleAttempt(redis, attempt, change).catch((err: Error) => {
    logger.warn('login limiter unavailable', { err: err.message });
  });
}

/**
 * Brute-force protection of POST /auth/login, before the password is looked at: at most
 * LOGIN_MAX_FAILURES_PER_ACCOUNT failures per email and LOGIN_MAX_FAILURES_PER_IP per
 * client address within LOGIN_FAILURE_WINDOW_SECONDS, else 429 without checking anything.
 * Unknown emails count like known ones, so a 429 reveals nothing about which exist.
 * Redis down: fails open like the API rate limiter (logins keep working, logged).
 */
export async function guardLogin(app: AppContext, logger: Logger, email: string, clientAddress: string): Promise<LoginGuard> {
  const { config, redis } = app;
  const prefix = config.QUEUE_PREFIX;
  const ipKey = `${prefix}:login-failures:ip:${addressBucket(clientAddress)}`;
  const account = accountKey(prefix, email);
  let admission;
  try {
    admission = await admitAttempt(
      redis,
      [
        { key: ipKey, max: config.LOGIN_MAX_FAILURES_PER_IP },
        { key: account, max: config.LOGIN_MAX_FAILURES_PER_ACCOUNT },
      ],
      config.LOGIN_FAILURE_WINDOW_SECONDS * 1000,
    );
  } catch (err) {
    logger.warn('login limiter unavailable', { err: (err as Error).message });
    return noGuard;
  }
  if (!admission.admitted) {
    const seconds = Math.max(1, Math.ceil(admission.retryAfterMs / 1000));
    logger.warn('login throttled', { client: addressBucket(clientAddress), retry_after_seconds: seconds });
    throw new AppError('rate-limit-exceeded', `Too many failed logins for this account or from this address; retry in ${seconds} s.`, { retry_after_seconds: seconds }, { 'Retry-After': String(seconds) });
  }
  const { attempt } = admission;
  return {
    succeeded: () => settle(redis, logger, attempt, { uncount: [ipKey], reset: [account] }),
    abandoned: () => settle(redis, logger, attempt, { uncount: [ipKey, account] }),
  };
}
