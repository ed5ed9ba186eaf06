import { createHash } from 'node:crypto';
import type { Redis } from '@hookline/queues';

export type ScriptRunner = (redis: Redis, keys: string[], args: (string | number)[]) => Promise<unknown>;

/** A Lua script run with EVALSHA (the script body crosses the wire only once per server). */
export function redisScript(lua: string): ScriptRunner {
  const sha = createHash('sha1').update(lua).digest('hex');
  return async (redis, keys, args) => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!String((err as Error).message).includes('NOSCRIPT')) throw err;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }
  };
}
