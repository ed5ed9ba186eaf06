export { newId, idTime, idFloor, ID_PREFIXES, type IdPrefix } from './ids';
export { createPool, hotStatement, parseDatabaseUrl, type Pool } from './pool';
export { createPrisma } from './prisma';
export { migrate } from './migrate';
export type { PrismaClient } from './generated/client';
export * as Models from './generated/enums';
export type { Prisma } from './generated/client';
/** Writes SQL NULL to a nullable Json column (Prisma refuses a plain null there). */
export { DbNull } from './generated/internal/prismaNamespace';
export { withTransaction, withTryLock } from './transaction';
export { isDbUnreachable, isTransientDbError, isLockConflict, retryTransient, retryingDeadlocks, DEADLOCK_TRIES, type RetryOptions } from './transient';
export { coalesced, type Coalesced } from './coalesced';
