// Makes sure PostgreSQL and Redis answer before the stack starts: starts a locally
// installed one when it does not answer, else says in one line what to run.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import IORedis from 'ioredis';
import { Client } from 'pg';
import { parseDatabaseUrl } from '@hookline/db';

function has(bin: string): boolean {
  try {
    execSync(`command -v ${bin}`, { stdio: 'ignore', shell: '/bin/bash' });
    return true;
  } catch {
    return false;
  }
}

async function pgAnswers(url: string): Promise<boolean> {
  const c = new Client({ connectionString: parseDatabaseUrl(url).connectionString, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

async function redisAnswers(url: string): Promise<boolean> {
  const r = new IORedis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    await r.ping();
    return true;
  } catch {
    return false;
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
  if (!(await pgAnswers(databaseUrl))) {
    const host = new URL(databaseUrl).hostname;
    if (isLocal(host) && has('pg_ctlcluster') && existsSync('/etc/postgresql')) {
      const version = readdirSync('/etc/postgresql')[0];
      log(`PostgreSQL does not answer; starting the local cluster ${version}/main`);
      execSync(`pg_ctlcluster --skip-systemctl-redirect ${version} main start`, { stdio: 'inherit' });
      if (!(await waitUntil(() => pgAnswers(databaseUrl), 20_000))) throw new Error('PostgreSQL did not come up');
    } else {
      throw new Error(`PostgreSQL does not answer at ${host}: install it (apt-get install postgresql) and start it, or set DATABASE_URL`);
    }
  }
  if (!(await redisAnswers(redisUrl))) {
    const u = new URL(redisUrl);
    if (isLocal(u.hostname) && has('redis-server')) {
      log('Redis does not answer; starting a local redis-server');
      execSync(`redis-server --daemonize yes --bind 127.0.0.1 --port ${u.port || 6379} --save "" --appendonly no`, { stdio: 'inherit' });
      if (!(await waitUntil(() => redisAnswers(redisUrl), 10_000))) throw new Error('Redis did not come up');
    } else {
      throw new Error(`Redis does not answer at ${u.host}: install it (apt-get install redis-server) and start it, or set REDIS_URL`);
    }
  }
}
