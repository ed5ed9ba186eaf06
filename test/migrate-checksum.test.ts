// A migration that was applied is skipped by name, but only while it is the file that was
// applied: one edited afterwards is an error naming it, instead of a database silently left
// without the edit (Prisma keeps the same sha256 checksum of migration.sql).
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { migrate, parseDatabaseUrl } from '@hookline/db';

const BASE = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const schema = `hl_mig_checksum_${process.pid}`;

function urlFor(s: string): string {
  const u = new URL(BASE);
  u.searchParams.set('schema', s);
  return u.toString();
}

afterAll(async () => {
  const c = new Client({ connectionString: parseDatabaseUrl(BASE).connectionString });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await c.end();
});

test('an applied migration edited afterwards is refused by name; unchanged ones are skipped; new ones still apply', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hl-mig-'));
  const write = (name: string, sql: string): void => {
    mkdirSync(join(dir, name), { recursive: true });
    writeFileSync(join(dir, name, 'migration.sql'), sql);
  };
  write('1_first', 'CREATE TABLE first_t (id int PRIMARY KEY);');
  expect(await migrate(urlFor(schema), dir)).toEqual(['1_first']);

  write('2_second', 'CREATE TABLE second_t (id int PRIMARY KEY);');
  expect(await migrate(urlFor(schema), dir)).toEqual(['2_second']);
  expect(await migrate(urlFor(schema), dir)).toEqual([]);

  write('1_first', 'CREATE TABLE first_t (id int PRIMARY KEY, extra text);');
  write('3_third', 'CREATE TABLE third_t (id int PRIMARY KEY);');
  await expect(migrate(urlFor(schema), dir)).rejects.toThrow(/migration 1_first was changed after it was applied/);
  // Nothing after it ran either.
  const c = new Client({ connectionString: parseDatabaseUrl(BASE).connectionString });
  await c.connect();
  try {
    const { rows } = await c.query(`SELECT migration_name FROM "${schema}"."_prisma_migrations" ORDER BY migration_name`);
    expect(rows.map((r) => r.migration_name)).toEqual(['1_first', '2_second']);
  } finally {
    await c.end();
  }
});
