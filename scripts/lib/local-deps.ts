// Makes sure PostgreSQL and Redis answer before the stack starts: starts a locally
// installed one when it does not answer, else says in one line what to run.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import IORedis, { ReplyError } from 'ioredis';
import { Client, DatabaseError } from 'pg';
import { parseDatabaseUrl } from '@hookline/db';

function has(bin: string): boolean {
  try {
    execSync(`command -v ${bin}`, { stdio: 'ignore', shell: '/bin/bash' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether PostgreSQL answers. A server that answers with an error (no such database,
 * wrong password) is up: starting it cannot help, so that error is returned to be shown.
 */
async function pgAnswers(url: string): Promise<boolean | DatabaseError> {
  const c = new Client({ connectionString: parseDatabaseUrl(url).connectionString, connectionTimeoutMillis: 2000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.end();
    return true;
  } catch (err) {
    // 57P03: the server is starting up or shutting down.
    return err instanceof DatabaseError && err.code !== '57P03' ? err : false;
  }
}

/** Whether Redis answers; like pgAnswers, an error reply (wrong password, no such database) is returned. */
async function redisAnswers(url: string): Promise<boolean | Error> {
  const r = new IORedis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  let replied: Error | undefined;
  r.on('error', (err: Error) => {
    if (err instanceof ReplyError) replied = err;
  });
  try {
    await r.connect();
    await r.ping();
    return true;
  } catch (err) {
    return replied ?? (err instanceof ReplyError ? (err as Error) : false);
  } finally {
    r.disconnect();
  }
}

const isLocal = (host: string): boolean => ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host);

async function waitUntil(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 300));
  }
  return false;
}

export async function ensureLocalDeps(databaseUrl: string, redisUrl: string, log: (m: string) => void): Promise<void> {
  const pg = await pgAnswers(databaseUrl);
  if (pg instanceof Error) throw new Error(`PostgreSQL at ${new URL(databaseUrl).host} refused the connection: ${pg.message} (check DATABASE_URL)`);
  if (!pg) {
    const host = new URL(databaseUrl).hostname;
    if (isLocal(host) && has('pg_ctlcluster') && existsSync('/etc/postgresql')) {
      const version = readdirSync('/etc/postgresql')[0];
      log(`PostgreSQL does not answer; starting the local cluster ${version}/main`);
      execSync(`pg_ctlcluster --skip-systemctl-redirect ${version} main start`, { stdio: 'inherit' });
      if (!(await waitUntil(async () => (await pgAnswers(databaseUrl)) !== false, 20_000))) throw new Error('PostgreSQL did not come up');
      return ensureLocalDeps(databaseUrl, redisUrl, log);
    }
    throw new Error(`PostgreSQL does not answer at ${host}: install it (apt-get install postgresql) and start it, or set DATABASE_URL`);
  }
  const redis = await redisAnswers(redisUrl);
  if (redis instanceof Error) throw new Error(`Redis at ${new URL(redisUrl).host} refused the connection: ${redis.message} (check REDIS_URL)`);
  if (!redis) {
    const u = new URL(redisUrl);
    if (isLocal(u.hostname) && has('redis-server')) {
      log('Redis does not answer; starting a local redis-server');
      execSync(`redis-server --daemonize yes --bind 127.0.0.1 --port ${u.port || 6379} --save "" --appendonly no`, { stdio: 'inherit' });
      if (!(await waitUntil(async () => (await redisAnswers(redisUrl)) !== false, 10_000))) throw new Error('Redis did not come up');
      return ensureLocalDeps(databaseUrl, redisUrl, log);
    }
    throw new Error(`Redis does not answer at ${u.host}: install it (apt-get install redis-server) and start it, or set REDIS_URL`);
  }
}
