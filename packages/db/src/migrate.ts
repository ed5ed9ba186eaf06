import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { parseDatabaseUrl } from './pool';

const MIGRATIONS_DIR = resolve(__dirname, '../../../prisma/migrations');

// The same bookkeeping table Prisma writes, so `prisma migrate status/deploy` accept
// the history this runner leaves.
const BOOKKEEPING = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

/**
 * CREATE SCHEMA IF NOT EXISTS, once more when someone outside the lock (another tool, a
 * person) created it at the same moment: the loser of that race gets a unique violation
 * (23505) or duplicate_schema (42P06), and the schema exists by then.
 */
async function createSchema(client: Client, schema: string): Promise<void> {
  const create = (): Promise<unknown> => client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  try {
    await create();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code !== '23505' && code !== '42P06') throw err;
    await create();
  }
}

/**
 * Applies pending folders of prisma/migrations in name order, each in one transaction,
 * under an advisory lock so that replicas starting together do not race.
 * Returns the names applied.
 */
export async function migrate(url: string, dir = MIGRATIONS_DIR, log: (m: string) => void = () => undefined): Promise<string[]> {
  const { connectionString, schema } = parseDatabaseUrl(url);
  const client = new Client({ connectionString });
  await client.connect();
  try {
    // The lock first: migrators starting together on an empty schema would otherwise race
    // in CREATE SCHEMA IF NOT EXISTS, and the loser fails on pg_namespace's unique index.
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`hookline-migrate:${schema}`]);
    await createSchema(client, schema);
    await client.query(`SET search_path TO "${schema}"`);
    await client.query(BOOKKEEPING);
    const done = new Map(
      (
        await client.query<{ migration_name: string; checksum: string }>(
          'SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
        )
      ).rows.map((r) => [r.migration_name, r.checksum]),
    );
    const folders = readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(dir, d.name, 'migration.sql')))
      .map((d) => d.name)
      .sort();
    const applied: string[] = [];
    for (const name of folders) {
      const sql = readFileSync(join(dir, name, 'migration.sql'), 'utf8');
      const checksum = createHash('sha256').update(sql).digest('hex');
      // Applied already: skipped by name, but only if it is still the file that was applied
      // (Prisma's checksum: sha256 of migration.sql). A migration edited after it ran would
      // otherwise leave this database without the edit, silently.
      const appliedChecksum = done.get(name);
      if (appliedChecksum !== undefined) {
        if (appliedChecksum !== checksum) {
          throw new Error(`migration ${name} was changed after it was applied to schema "${schema}" (checksum ${appliedChecksum.slice(0, 12)}… applied, ${checksum.slice(0, 12)}… now): restore the applied file, or add the change as a new migration`);
        }
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query(
          'INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count) VALUES ($1, $2, now(), $3, 1)',
          [randomUUID(), checksum, name],
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${name} failed: ${(err as Error).message}`);
      }
      log(`applied migration ${name}`);
      applied.push(name);
    }
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [`hookline-migrate:${schema}`]);
    return applied;
  } finally {
    await client.end();
  }
}
