// The `wait-for-migrations` initContainer of every Hookline Deployment: holds the pod
// until the database has every migration this image ships (the hookline-migrate Job
// applies them), so no service ever starts against an older schema. Read-only: it needs
// no DDL rights and no Kubernetes API access, and it checks the fact that matters (the
// schema level) instead of the state of a Job that may already have been cleaned up.
//   docker run hookline deploy/scripts/wait-for-migrations.ts
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { baseEnv, loadConfig, type EnvSchema } from '@hookline/config';
import { parseDatabaseUrl } from '@hookline/db';

export const MIGRATIONS_DIR = resolve(__dirname, '../../prisma/migrations');

/** What this script reads from the environment (the manifests test checks it). */
export const waitEnv = { DATABASE_URL: baseEnv.DATABASE_URL } as const satisfies EnvSchema;

const POLL_MS = 2000;
const REPORT_EVERY_MS = 15_000;
// Past this the container fails, so a stuck migration shows as Init:Error, not silence.
const GIVE_UP_MS = 15 * 60_000;

/** Names of the migration folders in `dir` that the database has not finished applying. */
export async function pendingMigrations(url: string, dir = MIGRATIONS_DIR): Promise<string[]> {
  const shipped = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(dir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort();
  const { connectionString, schema } = parseDatabaseUrl(url);
  const client = new Client({ connectionString, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const table = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`"${schema}"."_prisma_migrations"`]);
    if (!table.rows[0]?.t) return shipped;
    const done = await client.query<{ migration_name: string }>(
      `SELECT migration_name FROM "${schema}"."_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
    );
    const applied = new Set(done.rows.map((r) => r.migration_name));
    return shipped.filter((name) => !applied.has(name));
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const { DATABASE_URL } = loadConfig(waitEnv);
  const started = Date.now();
  let nextReport = 0;
  for (;;) {
    const pending = await pendingMigrations(DATABASE_URL).catch((err: Error) => [`(database not reachable: ${err.message})`]);
    if (pending.length === 0) {
      console.log('wait-for-migrations: the schema is up to date');
      return;
    }
    const waited = Date.now() - started;
    if (waited > GIVE_UP_MS) throw new Error(`still waiting after ${GIVE_UP_MS / 60_000} min for: ${pending.join(', ')}`);
    if (waited >= nextReport) {
      console.log(`wait-for-migrations: waiting for ${pending.join(', ')}`);
      nextReport = waited + REPORT_EVERY_MS;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

if (require.main === module) {
  main().catch((err: Error) => {
    console.error(`wait-for-migrations: ${err.message}`);
    process.exit(1);
  });
}
