import { AppError, type FieldError } from '@hookline/errors';
import type { Prisma } from '@hookline/db';
import { publishConfigChange, type ConfigChange } from '@hookline/queues';
import type { AppContext } from '../context';
import type { PlanName } from '../config';

export type Tx = Prisma.TransactionClient;
export type ConfigKind = 'ingester' | 'destination' | 'flow' | 'cluster' | 'saved-payload';

/**
 * Serialises writes of one kind within one tenant for the rest of the transaction, so a
 * "is this name free?" check and the insert cannot interleave with another request's.
 */
export async function lockNames(tx: Tx, kind: ConfigKind, tenantId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${namesLockKey(kind, tenantId)}))`;
}

/** The advisory lock key of lockNames, for a transaction on a raw pg client (cluster-lifecycle.ts). */
export function namesLockKey(kind: ConfigKind, tenantId: string): string {
  return `names:${kind}:${tenantId}`;
}

export function duplicateName(kind: string, name: string): AppError {
  return new AppError('conflict', `${/^[aeiou]/i.test(kind) ? 'An' : 'A'} ${kind} named "${name}" already exists in this tenant.`, { errors: [{ field: 'name', message: 'is already used' }] });
}

/** Tells ingest and router to drop cached configuration (after the commit). */
export async function announce(app: AppContext, change: ConfigChange): Promise<void> {
  await publishConfigChange(app.redis, app.config.QUEUE_PREFIX, change);
}

const PLAN_RANK: Record<PlanName, number> = { free: 0, pro: 1, business: 2, enterprise: 3 };

/** 403 plan-required unless the tenant's plan is at least `needed`. */
export function requirePlan(plan: PlanName, needed: PlanName, feature: string): void {
  if (PLAN_RANK[plan] < PLAN_RANK[needed]) {
    throw new AppError('plan-required', `${feature} needs the ${needed} plan or above; this tenant is on ${plan}.`, { required_plan: needed, current_plan: plan, feature });
  }
}

/** 422 naming the fields whose references do not resolve within the tenant. */
export function unresolved(errors: FieldError[]): AppError {
  return new AppError('unprocessable-entity', 'The request refers to objects that do not exist in this tenant.', { errors });
}

/** Prisma's unique-violation code, for the tables that carry a unique name. */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'P2002';
}
