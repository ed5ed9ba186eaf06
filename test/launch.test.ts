// scripts/launch.cjs (the image's ENTRYPOINT), scripts/build.ts (`pnpm build`), and the
// operator scripts: `pnpm start` (start-all.ts), `pnpm admin`, `pnpm db:migrate`.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { flushPrefix, freePort, shippedCommand, uniquePrefix, waitFor } from '@hookline/testing';
import { ENTRIES, nodeOptionsFor, SERVICE_NODE_OPTIONS, serviceNodeOptions } from '../scripts/lib/entries';
import { ensureLocalDeps } from '../scripts/lib/local-deps';
import { migrate } from '@hookline/db';

const ROOT = resolve(__dirname, '..');

function run(command: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((res, rej) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', rej);
    child.on('exit', (code) => res({ code, out, err }));
  });
}

test('the launcher runs the bundle as the main module, passes the arguments on, and stack traces name the TypeScript source', async () => {
  const shipped = await shippedCommand('test/fixtures/launch-probe.ts');
  const r = await run(shipped.command, [...shipped.args, '--flag', 'x'], shipped.env);
  expect(r.code).toBe(1);
  const { heapLimitMb, ...report } = JSON.parse(r.out.trim()) as { isMain: boolean; argv1: string; args: string[]; heapLimitMb: number };
  expect(report).toEqual({ isMain: true, argv1: join(shipped.env['HOOKLINE_DIST_DIR']!, 'test/fixtures/launch-probe.js'), args: ['--flag', 'x'] });
  // SERVICE_NODE_OPTIONS: a 256 MB old space (the limit adds the young generation).
  expect(heapLimitMb).toBeGreaterThanOrEqual(256);
  expect(heapLimitMb).toBeLessThan(400);
  expect(r.err).toContain('probe failure');
  expect(r.err).toMatch(/failHere \(.*test\/fixtures\/launch-probe\.ts:4:\d+\)/);
});

test("the services' V8 flags come first, so that the user's NODE_OPTIONS overrides them", async () => {
  const router = 'services/router/src/main.ts';
  expect(serviceNodeOptions(router, undefined)).toBe(SERVICE_NODE_OPTIONS);
  expect(serviceNodeOptions(router, '  ')).toBe(SERVICE_NODE_OPTIONS);
  expect(serviceNodeOptions(router, '--max-old-space-size=1024 --trace-gc')).toBe(`${SERVICE_NODE_OPTIONS} --max-old-space-size=1024 --trace-gc`);
  const shipped = await shippedCommand('test/fixtures/launch-probe.ts');
  const r = await run(shipped.command, shipped.args, { ...shipped.env, NODE_OPTIONS: serviceNodeOptions('test/fixtures/launch-probe.ts', '--max-old-space-size=1024') });
  expect((JSON.parse(r.out.trim()) as { heapLimitMb: number }).heapLimitMb).toBeGreaterThanOrEqual(1024);
});

test('a missing bundle stops the launcher with exit 2, naming `pnpm build`', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'hookline-empty-dist-'));
  try {
    const r = await run(process.execPath, ['scripts/launch.cjs', 'services/api/src/main.ts'], { HOOKLINE_DIST_DIR: empty });
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${join(empty, 'services/api/src/main.js')} does not exist: run \`pnpm build\` first`);
    expect((await run(process.execPath, ['scripts/launch.cjs'])).code).toBe(2);
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});

test('pnpm build bundles every entry point, with progress, and refuses an unknown one', async () => {
  const out = mkdtempSync(join(tmpdir(), 'hookline-build-'));
  try {
    const tsx = resolve(ROOT, 'node_modules/.bin/tsx');
    const r = await run(tsx, ['scripts/build.ts', '--out', out]);
    expect(r.code).toBe(0);
    for (const [i, entry] of ENTRIES.entries()) {
      expect(r.out).toContain(`[${i + 1}/${ENTRIES.length}] ${entry} -> `);
      expect(existsSync(join(out, entry.replace(/\.ts$/, '.js')))).toBe(true);
      expect(existsSync(join(out, entry.replace(/\.ts$/, '.js.map')))).toBe(true);
    }
    // `pnpm start:<service>` builds, then launches from HOOKLINE_DIST_DIR when it is set: the same folder.
    const viaEnv = mkdtempSync(join(tmpdir(), 'hookline-build-env-'));
    try {
      expect((await run(tsx, ['scripts/build.ts', 'scripts/migrate.ts'], { HOOKLINE_DIST_DIR: viaEnv })).code).toBe(0);
      expect(existsSync(join(viaEnv, 'scripts/migrate.js'))).toBe(true);
    } finally {
      rmSync(viaEnv, { recursive: true, force: true });
    }
    const bad = await run(tsx, ['scripts/build.ts', '--out', out, 'services/nope/src/main.ts']);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('not an entry point: services/nope/src/main.ts');
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('the deliverer runs with larger semi-spaces than the other services, and they take effect', async () => {
  const deliverer = 'services/deliverer/src/main.ts';
  expect(nodeOptionsFor(deliverer)).toBe('--max-old-space-size=256 --max-semi-space-size=16');
  expect(nodeOptionsFor('services/api/src/main.ts')).toBe(SERVICE_NODE_OPTIONS);
  expect(serviceNodeOptions(deliverer, '--trace-gc')).toBe(`${nodeOptionsFor(deliverer)} --trace-gc`);
  // The heap limit is the old space plus the young generation (three semi-spaces' worth).
  const shipped = await shippedCommand('test/fixtures/launch-probe.ts');
  const limit = async (options: string): Promise<number> =>
    (JSON.parse((await run(shipped.command, shipped.args, { ...shipped.env, NODE_OPTIONS: options })).out.trim()) as { heapLimitMb: number }).heapLimitMb;
  expect((await limit(nodeOptionsFor(deliverer))) - (await limit(SERVICE_NODE_OPTIONS))).toBeGreaterThanOrEqual(16);
});

// --- operator scripts, on a private schema and queue prefix, every socket on loopback ---

const BASE_DB = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const TSX = resolve(ROOT, 'node_modules/.bin/tsx');

async function sql<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: BASE_DB });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A schema name nobody uses yet (not created), and its URL. */
function freshSchema(label: string): { schema: string; url: string; drop(): Promise<void> } {
  const schema = `hl_${label}_${randomBytes(4).toString('hex')}`;
  const u = new URL(BASE_DB);
  u.searchParams.set('schema', schema);
  return { schema, url: u.toString(), drop: () => sql((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).then(() => undefined) };
}

const appliedMigrations = (schema: string): Promise<number> =>
  sql(async (c) => (await c.query(`SELECT count(*)::int AS n FROM "${schema}"."_prisma_migrations" WHERE finished_at IS NOT NULL`)).rows[0].n as number);

describe('ensureLocalDeps (pnpm start)', () => {
  it('reports a server that answers with an error as such, naming the variable, instead of trying to start one', async () => {
    const logged: string[] = [];
    const u = new URL(BASE_DB);
    u.pathname = `/hl_no_such_db_${randomBytes(3).toString('hex')}`;
    await expect(ensureLocalDeps(u.toString(), REDIS, (m) => logged.push(m))).rejects.toThrow(/refused the connection: database "hl_no_such_db_\w+" does not exist \(check DATABASE_URL\)/);
    const r = new URL(REDIS);
    r.username = 'hl_nobody';
    r.password = 'wrong';
    await expect(ensureLocalDeps(BASE_DB, r.toString(), (m) => logged.push(m))).rejects.toThrow(/Redis at .* refused the connection: WRONGPASS.*\(check REDIS_URL\)/);
    expect(logged).toEqual([]);
    await expect(ensureLocalDeps(BASE_DB, REDIS, (m) => logged.push(m))).resolves.toBeUndefined();
  });
});

describe('migrations', () => {
  it('are safe when another process creates the empty schema at the same moment', async () => {
    const db = freshSchema('migrace');
    const other = new Client({ connectionString: BASE_DB });
    await other.connect();
    try {
      // Another migrator's CREATE SCHEMA, not committed yet: ours has to wait for it.
      await other.query('BEGIN');
      await other.query(`CREATE SCHEMA "${db.schema}"`);
      const ours = migrate(db.url);
      ours.catch(() => undefined);
      await waitFor(
        // (Not on `other`: inside its transaction pg_stat_activity stays as first read.)
        () => sql(async (c) => (await c.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`, [`CREATE SCHEMA IF NOT EXISTS "${db.schema}"%`])).rowCount),
        { what: 'our CREATE SCHEMA to wait for the other one' },
      );
      await other.query('COMMIT');
      expect((await ours).length).toBeGreaterThan(0);
      expect(await migrate(db.url)).toEqual([]);
      expect(await appliedMigrations(db.schema)).toBe((await ours).length);
    } finally {
      await other.end();
      await db.drop();
    }
  });
});

describe('migrations started together', () => {
  it('run one after the other: a run started while another is inside a migration waits for it, then finds nothing to apply', async () => {
    // Made certain rather than left to timing: the first run's first migration waits, inside
    // its transaction, for a lock the test holds (the runner's `dir` points at two made-up
    // migrations), and only once the second run waits too does the test let it go. Without
    // the runner's lock the second would not wait for the first but start the same
    // migration, and fail on its table (or apply it twice).
    const db = freshSchema('migpar');
    const gateKey = 1_000_000_000 + randomBytes(3).readUIntBE(0, 3);
    const dir = mkdtempSync(join(tmpdir(), 'hookline-migrations-'));
    const migration = (name: string, sqlText: string): void => {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'migration.sql'), sqlText);
    };
    migration('1_gated', `SELECT pg_advisory_xact_lock(${gateKey});\nCREATE TABLE gated (id int);`);
    migration('2_after', 'CREATE TABLE after_gated (id int);');
    // The runners' connections carry an application_name of their own, to be found waiting.
    const appName = db.schema;
    const url = new URL(db.url);
    url.searchParams.set('application_name', appName);
    const waiting = (): Promise<string[]> =>
      sql(async (c) => (await c.query(`SELECT query FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [appName])).rows.map((r) => r.query as string));
    const gate = new Client({ connectionString: BASE_DB });
    await gate.connect();
    try {
      await gate.query('SELECT pg_advisory_lock($1)', [gateKey]);
      const settled: string[] = [];
      const run = (name: string): Promise<string[]> => {
        const p = migrate(url.toString(), dir).finally(() => settled.push(name));
        p.catch(() => undefined);
        return p;
      };
      const first = run('first');
      await waitFor(async () => (await waiting()).some((q) => q.includes(`pg_advisory_xact_lock(${gateKey})`)), { what: 'the first run to wait inside its first migration' });
      const second = run('second');
      await waitFor(async () => (await waiting()).length === 2, { what: 'the second run to wait as well' });
      expect(settled).toEqual([]);
      await gate.query('SELECT pg_advisory_unlock($1)', [gateKey]);
      expect(await first).toEqual(['1_gated', '2_after']);
      // The second waited for the first (it found both applied: nothing left to run). Which
      // promise settles first after that is the event loop's business: the first still closes
      // its connection when the second, given the lock, already reads the applied list.
      expect(await second).toEqual([]);
      expect([...settled].sort()).toEqual(['first', 'second']);
      expect(await appliedMigrations(db.schema)).toBe(2);
    } finally {
      await gate.end();
      rmSync(dir, { recursive: true, force: true });
      await db.drop();
    }
  });
});

describe('pnpm admin', () => {
  it('shows migration progress on stderr and only the result on stdout, and prints its usage on help', async () => {
    const db = freshSchema('admin');
    try {
      const r = await run(TSX, ['scripts/admin.ts', 'create-tenant', '--name', 'Acme', '--plan', 'pro', '--email', `owner-${randomBytes(3).toString('hex')}@acme.test`], { DATABASE_URL: db.url });
      expect(r.code).toBe(0);
      expect(r.err).toMatch(/applied migration \d+_init/);
      expect(JSON.parse(r.out)).toMatchObject({ tenant_id: expect.stringMatching(/^ten_/), plan: 'pro', api_key: { key: expect.stringMatching(/^hk_/) } });
      const help = await run(TSX, ['scripts/admin.ts', 'help']);
      expect(help.code).toBe(0);
      expect(help.out).toContain('pnpm admin create-tenant --name <name>');
      const bad = await run(TSX, ['scripts/admin.ts', 'create-tenant', '--name', 'x', '--email', 'nope', '--plan', 'gold'], { DATABASE_URL: db.url });
      expect(bad.code).toBe(1);
      expect(bad.err).toContain('--email must be an email address; --plan must be one of free, pro, business, enterprise');
      // The target is named (without credentials); a password of one's own comes from the
      // environment, never argv, and is not printed back; names are trimmed; no `%` in emails.
      const base = new URL(BASE_DB);
      expect(r.err).toContain(`database: ${base.hostname}:${base.port || '5432'}${base.pathname} (schema ${db.schema})`);
      expect(r.err).not.toContain('@');
      const own = await run(TSX, ['scripts/admin.ts', 'create-tenant', '--name', '  Acme2  ', '--email', `Own-${randomBytes(3).toString('hex')}@acme.test`], { DATABASE_URL: db.url, HOOKLINE_ADMIN_PASSWORD: 'operator-chosen-pw' });
      expect(own.code).toBe(0);
      expect(own.out).not.toContain('operator-chosen-pw');
      expect(JSON.parse(own.out)).toMatchObject({ name: 'Acme2', user: { email: expect.stringMatching(/^own-/) } });
      expect(JSON.parse(own.out).user.password).toBeUndefined();
      // A user whose email differs only in case (inserted by hand, say) already holds it.
      const upper = `Case-${randomBytes(3).toString('hex')}@acme.test`;
      await sql((c) => c.query(`INSERT INTO "${db.schema}".users (id, tenant_id, email, password_hash) SELECT 'usr_case', tenant_id, $1, 'x' FROM "${db.schema}".users LIMIT 1`, [upper]));
      const dup = await run(TSX, ['scripts/admin.ts', 'create-tenant', '--name', 'Case', '--email', upper.toLowerCase()], { DATABASE_URL: db.url });
      expect([dup.code, dup.err.includes(`a user with email ${upper.toLowerCase()} already exists`)]).toEqual([1, true]);
      const argv = await run(TSX, ['scripts/admin.ts', 'create-tenant', '--name', 'x', '--email', '%@acme.test', '--password', 'secret-on-argv'], { DATABASE_URL: db.url });
      expect(argv.code).toBe(1);
      expect(argv.err).toContain('--email must be an email address; --password is not taken on the command line');
    } finally {
      await db.drop();
    }
  });

  it('answers --help on each command, and refuses a stray argument or option without touching the database', async () => {
    const db = freshSchema('admin_usage');
    try {
      for (const command of ['create-tenant', 'add-user', 'migrate']) {
        const help = await run(TSX, ['scripts/admin.ts', command, '--help'], { DATABASE_URL: db.url });
        expect([command, help.code, help.out.includes('pnpm admin add-user --tenant <tenant_id>')]).toEqual([command, 0, true]);
      }
      for (const args of [['migrate', 'now'], ['create-tenant', '--nmae', 'Acme', '--email', 'a@acme.test'], ['create-tenant', 'Acme', '--name', 'Acme', '--email', 'a@acme.test'], ['frobnicate']]) {
        const r = await run(TSX, ['scripts/admin.ts', ...args], { DATABASE_URL: db.url });
        expect([args, r.code, r.err.includes('usage:')]).toEqual([args, 1, true]);
      }
      // Nothing above ran a migration: the schema has no tables.
      const { rows } = await sql((c) => c.query(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1`, [db.schema]));
      expect(rows[0].n).toBe(0);
    } finally {
      await db.drop();
    }
  });
});

interface StartAll {
  child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** pid of each service, from the "started <name> on port <p> (pid <n>)" lines. */
  pids(): Record<string, number>;
}

function startAll(env: Record<string, string>): StartAll {
  let out = '';
  const child = spawn(TSX, ['scripts/start-all.ts'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
  return {
    child,
    output: () => out,
    exited,
    pids: () => Object.fromEntries([...out.matchAll(/started (\w+) on port \d+ \(pid (\d+)\)/g)].map((m) => [m[1]!, Number(m[2])])),
  };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('pnpm start (scripts/start-all.ts)', () => {
  jest.setTimeout(180_000);
  const dist = mkdtempSync(join(tmpdir(), 'hookline-start-all-'));
  const prefix = uniquePrefix('startall');
  const started: StartAll[] = [];
  afterAll(async () => {
    for (const s of started) {
      for (const pid of Object.values(s.pids())) if (alive(pid)) process.kill(pid, 'SIGKILL');
      if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    }
    await flushPrefix(prefix);
    rmSync(dist, { recursive: true, force: true });
  });

  async function ports(): Promise<Record<'API_PORT' | 'INGEST_PORT' | 'ROUTER_PORT' | 'DELIVERER_PORT', string>> {
    return { API_PORT: String(await freePort()), INGEST_PORT: String(await freePort()), ROUTER_PORT: String(await freePort()), DELIVERER_PORT: String(await freePort()) };
  }

  const baseEnv = (dbUrl: string): Record<string, string> => ({ DATABASE_URL: dbUrl, REDIS_URL: REDIS, QUEUE_PREFIX: prefix, HOST: '127.0.0.1', HOOKLINE_DIST_DIR: dist, LOG_LEVEL: 'warn', SHUTDOWN_TIMEOUT_MS: '5000' });

  async function ready(p: Record<string, string>): Promise<void> {
    for (const port of Object.values(p)) {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.status === 200, { what: `the service on ${port}`, timeoutMs: 60_000 });
    }
  }

  /** Runs the four services with `pnpm start` on a fresh schema until they are ready, then `fn`; drops the schema after. */
  async function withStarted(label: string, env: Record<string, string>, fn: (s: StartAll, p: Record<string, string>, db: ReturnType<typeof freshSchema>) => Promise<void>): Promise<void> {
    const db = freshSchema(label);
    try {
      const p = await ports();
      const s = startAll({ ...baseEnv(db.url), ...p, ...env });
      started.push(s);
      await ready(p);
      await fn(s, p, db);
    } finally {
      await db.drop();
    }
  }

  it('on an empty schema: migrates, runs the four services on the ports given (hook URLs name ingest\'s), and stops them all when one dies', async () => {
    await withStarted('startall', {}, async (s, p, db) => {
      expect(await appliedMigrations(db.schema)).toBeGreaterThan(0);
      expect(Object.keys(s.pids()).sort()).toEqual(['api', 'deliverer', 'ingest', 'router']);

      // The quick start: a tenant from `pnpm admin`, then an ingester whose hook URL names the moved ingest port.
      const admin = await run(TSX, ['scripts/admin.ts', 'create-tenant', '--name', 'Acme', '--email', `o-${randomBytes(3).toString('hex')}@acme.test`], { DATABASE_URL: db.url });
      const { tenant_id: tid, api_key: { key } } = JSON.parse(admin.out) as { tenant_id: string; api_key: { key: string } };
      const res = await fetch(`http://127.0.0.1:${p.API_PORT}/v1/tenants/${tid}/ingesters`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'shop', provider: 'generic' }) });
      expect(res.status).toBe(201);
      const { hook_url: hookUrl } = (await res.json()) as { hook_url: string };
      expect(hookUrl).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${p.INGEST_PORT}/in/ing_`));
      expect((await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"order.created"}' })).status).toBe(202);
      // The discovery documents link to the api on its moved port.
      const discovery = await (await fetch(`http://127.0.0.1:${p.API_PORT}/ai/evidence/v1`)).text();
      expect(discovery).toContain(`http://127.0.0.1:${p.API_PORT}/`);
      expect(discovery).not.toContain('127.0.0.1:8080');

      // A service that dies is reported, and takes the others down with it.
      const pids = s.pids();
      process.kill(pids['router']!, 'SIGKILL');
      expect(await s.exited).toEqual({ code: 1, signal: null });
      expect(s.output()).toContain('router exited (SIGKILL); stopping the others');
      expect(Object.values(pids).filter(alive)).toEqual([]);
    });
  });

  it('stops every service on Ctrl-C (SIGINT) and exits 0, killing one that does not stop rather than leaving it behind', async () => {
    await withStarted('startint', { SHUTDOWN_TIMEOUT_MS: '1000' }, async (s) => {
      const pids = s.pids();
      // A stopped process cannot act on SIGTERM: it stands for a service stuck in its drain.
      process.kill(pids['deliverer']!, 'SIGSTOP');
      s.child.kill('SIGINT');
      expect(await s.exited).toEqual({ code: 0, signal: null });
      expect(Object.values(pids).filter(alive)).toEqual([]);
    });
  });

  it('a second Ctrl-C kills what is still draining', async () => {
    await withStarted('startint2', { SHUTDOWN_TIMEOUT_MS: '600000' }, async (s) => {
      const { deliverer, ...others } = s.pids();
      process.kill(deliverer!, 'SIGSTOP');
      s.child.kill('SIGINT');
      await waitFor(() => Object.values(others).every((pid) => !alive(pid)), { what: 'the other services to stop' });
      expect(alive(deliverer!)).toBe(true);
      s.child.kill('SIGINT');
      expect(await s.exited).toEqual({ code: 0, signal: null });
      expect(alive(deliverer!)).toBe(false);
    });
  });

  it('refuses a bad port variable by name before starting anything', async () => {
    const db = freshSchema('startbad');
    try {
      const s = startAll({ ...baseEnv(db.url), ...(await ports()), INGEST_PORT: '80a' });
      started.push(s);
      expect((await s.exited).code).toBe(1);
      expect(s.output()).toContain('INGEST_PORT must be a whole number in decimal digits (got "80a")');
      expect(s.pids()).toEqual({});
    } finally {
      await db.drop();
    }
  });
});
