import { migrate } from '@hookline/db';

/** Fails fast, with a clear message, when PostgreSQL or Redis is not there. */
export default async function globalSetup(): Promise<void> {
  const url = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
  const u = new URL(url);
  u.searchParams.set('schema', 'hl_setup_check');
  await migrate(u.toString()).catch((err: Error) => {
    throw new Error(`PostgreSQL is not reachable at ${url} (${err.message}); start it or set TEST_DATABASE_URL`);
  });
  const { default: IORedis } = await import('ioredis');
  const redis = new IORedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1, lazyConnect: true });
  await redis.connect().then(() => redis.ping()).catch((err: Error) => {
    throw new Error(`Redis is not reachable (${err.message}); start redis-server or set TEST_REDIS_URL`);
  });
  redis.disconnect();
}
