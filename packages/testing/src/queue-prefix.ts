import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A queue prefix private to one test file (a hash tag, like production's). */
export function uniquePrefix(label = 't'): string {
  return `{hltest-${label}-${randomBytes(4).toString('hex')}}`;
}

/** Deletes every key under a prefix (what "Redis lost its data" looks like to us). */
export async function flushPrefix(prefix: string, url = REDIS_URL): Promise<number> {
  const redis = new IORedis(url);
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) deleted += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}
