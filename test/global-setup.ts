import { Client } from 'pg';
import { migrate, parseDatabaseUrl } from '@hookline/db';

/**
 * Fails fast, with a clear message, when PostgreSQL or Redis is not there, or when the
 * migrations do not apply. The check's schema is made afresh each run, so that a migration
 * edited during development is applied as it is now (the runner refuses an applied one that
 * changed).
 */
export default async function globalSetup(): Promise<void> {
  const url = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
  const c = new Client({ connectionString: parseDatabaseUrl(url).connectionString });
  await c.connect().catch((err: Error) => {
    throw new Error(`PostgreSQL is not reachable at ${url} (${err.message}); start it or set TEST_DATABASE_URL`);
  });
  try {
    await c.query('DROP SCHEMA IF EXISTS hl_setup_check CASCADE');
  } finally {
    await c.end();
  }
  const u = new URL(url);
  u.searchParams.set('schema', 'hl_setup_check');
  await migrate(u.toString()).catch((err: Error) => {
    throw new Error(`the migrations do not apply to a fresh schema: ${err.message}`);
  });
  const { default: IORedis } = await import('ioredis');
  const redis = new IORedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1, lazyConnect: true });
  await redis.connect().then(() => redis.ping()).catch((err: Error) => {
    throw new Error(`Redis is not reachable (${err.message}); start redis-server or set TEST_REDIS_URL`);
  });
  redis.disconnect();
}
