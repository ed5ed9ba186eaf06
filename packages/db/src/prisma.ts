import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient } from './generated/client';
import { parseDatabaseUrl, sessionOptions } from './pool';

export interface PrismaOptions {
  /**
   * Sees the adapter's `pg` pool before its first use and returns it (the api counts its
   * PostgreSQL errors with instrumentPool). The pool is the one the adapter would make
   * itself; `$disconnect()` ends it.
   */
  instrumentPool?: (pool: Pool) => Pool;
}

export function createPrisma(url: string, max = 5, opts: PrismaOptions = {}): PrismaClient {
  const { connectionString, schema } = parseDatabaseUrl(url);
  const config = { connectionString, max, options: sessionOptions(schema) };
  const adapter = opts.instrumentPool ? new PrismaPg(opts.instrumentPool(new Pool(config)), { schema, disposeExternalPool: true }) : new PrismaPg(config, { schema });
  return new PrismaClient({ adapter });
}
