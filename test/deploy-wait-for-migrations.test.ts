// The wait-for-migrations init container: it holds a pod until the database has every
// migration of the image, and lets it go as soon as the migration Job has applied them.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { migrate } from '@hookline/db';
import { createTestDatabase, shippedCommand, waitFor, type TestDatabase } from '@hookline/testing';
import { MIGRATIONS_DIR, pendingMigrations } from '../deploy/scripts/wait-for-migrations';

const ROOT = resolve(__dirname, '..');
const BASE_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const shipped = readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(MIGRATIONS_DIR, d.name, 'migration.sql')))
  .map((d) => d.name)
  .sort();

function schemaUrl(schema: string): string {
  const u = new URL(BASE_URL);
  u.searchParams.set('schema', schema);
  return u.toString();
}

let db: TestDatabase;
const emptySchema = `hl_waitmig_${randomBytes(4).toString('hex')}`;
const scratch = mkdtempSync(join(tmpdir(), 'hookline-migrations-'));

beforeAll(async () => {
  db = await createTestDatabase('waitmig');
});

afterAll(async () => {
  await db.drop();
  const c = new Client({ connectionString: BASE_URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS "${emptySchema}" CASCADE`);
  await c.end();
  rmSync(scratch, { recursive: true, force: true });
});

test('a migrated database has nothing pending', async () => {
  expect(shipped.length).toBeGreaterThan(0);
  expect(await pendingMigrations(db.url)).toEqual([]);
});

test('a migration the image ships but the database lacks is pending; a folder without migration.sql is not', async () => {
  for (const name of [...shipped, '29991231000000_future']) {
    mkdirSync(join(scratch, name));
    writeFileSync(join(scratch, name, 'migration.sql'), 'SELECT 1;');
  }
  mkdirSync(join(scratch, '29991231000001_no_sql'));
  expect(await pendingMigrations(db.url, scratch)).toEqual(['29991231000000_future']);
});

test('a database never migrated has every migration pending', async () => {
  expect(await pendingMigrations(schemaUrl(`hl_absent_${randomBytes(4).toString('hex')}`))).toEqual(shipped);
});

test('the script waits while migrations are pending and exits 0 once they are applied', async () => {
  const url = schemaUrl(emptySchema);
  // As the image's init container runs it: the bundle, through the launcher.
  const launch = await shippedCommand('deploy/scripts/wait-for-migrations.ts');
  const child = spawn(launch.command, launch.args, {
    cwd: ROOT,
    env: { ...process.env, ...launch.env, DATABASE_URL: url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  try {
    await waitFor(async () => out.includes(`waiting for ${shipped.join(', ')}`), { timeoutMs: 20_000 });
    expect(child.exitCode).toBeNull();
    await migrate(url);
    expect(await exited).toBe(0);
    expect(out).toContain('the schema is up to date');
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
