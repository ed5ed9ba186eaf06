// A PostgreSQL cluster of the chaos run's own (initdb in a temp folder, a free loopback
// port), so that "restart PostgreSQL" never touches the shared cluster others test on.
// As root, the server runs as the `postgres` user (PostgreSQL refuses to run as root).
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort, waitFor } from '@hookline/testing';
import { onExitSync, startChild, type Child } from './children';
import { childPids } from './proc-sampler';

export interface PrivatePostgres {
  /** Base URL of the run's database (add ?schema= as usual). */
  url: string;
  pid(): number | undefined;
  /** The postmaster and every backend, for CPU sampling. */
  pids(): number[];
  /** Immediate shutdown (like a crash: recovery from WAL on start), down for `downMs`. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

function binDir(): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => join(base, v, 'bin')).find((d) => existsSync(join(d, 'initdb')));
  if (!found) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql/*/bin');
  return found;
}

function runAs(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}

export interface PrivatePostgresOptions {
  database?: string;
  /** Load pg_stat_statements, to see which statements the time goes to. */
  statStatements?: boolean;
}

export async function startPrivatePostgres(opts: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
  const database = opts.database ?? 'chaos';
  const extra = opts.statStatements ? ['-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=top'] : [];
  // More server settings for an investigation, e.g. BENCH_PG_SETTINGS='log_min_duration_statement=50 logging_collector=on log_directory=/tmp/pglog'.
  for (const kv of (process.env.BENCH_PG_SETTINGS ?? '').split(/\s+/).filter(Boolean)) extra.push('-c', kv);
  const bin = binDir();
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'hookline-chaos-pg-'));
  if (user.uid !== undefined) chownSync(dir, user.uid, user.gid ?? user.uid);
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  const data = join(dir, 'data');
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync'], { ...user, encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const admin = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  let child: Child | null = null;

  const start = async (): Promise<void> => {
    child = startChild('postgres', join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', ...extra], { ...user, cwd: dir });
    await waitFor(async () => {
      if (!child?.alive()) throw new Error(`postgres exited: ${child?.tail()}`);
      const c = new Client({ connectionString: admin, connectionTimeoutMillis: 1000 });
      try {
        await c.connect();
        await c.query('SELECT 1');
        return true;
      } finally {
        await c.end().catch(() => undefined);
      }
    }, { timeoutMs: 30_000, what: 'private PostgreSQL' });
  };
  await start();
  const c = new Client({ connectionString: admin });
  await c.connect();
  await c.query(`CREATE DATABASE "${database}"`);
  await c.end();
  const url = `postgresql://postgres@127.0.0.1:${port}/${database}`;
  if (opts.statStatements) {
    const db = new Client({ connectionString: url });
    await db.connect();
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await db.end();
  }
  return {
    url,
    pid: () => (child?.alive() ? child.pid : undefined),
    pids: () => (child?.alive() ? [child.pid, ...childPids(child.pid)] : []),
    // SIGQUIT to the postmaster is PostgreSQL's "immediate shutdown": no checkpoint, crash
    // recovery on the next start, exactly what a killed server looks like.
    async stop() {
      await child?.kill('SIGQUIT');
    },
    start,
    async close() {
      await child?.kill('SIGINT'); // fast shutdown
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
