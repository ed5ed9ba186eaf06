// `pnpm db:migrate`: applies pending migrations to DATABASE_URL.
import { loadConfig, baseEnv } from '@hookline/config';
import { migrate } from '@hookline/db';

async function main(): Promise<void> {
  const config = loadConfig({ DATABASE_URL: baseEnv.DATABASE_URL });
  const applied = await migrate(config.DATABASE_URL, undefined, (m) => console.log(m));
  console.log(applied.length ? `${applied.length} migration(s) applied` : 'database is up to date');
}

main().catch((err: Error) => {
  console.error(`migrate: ${err.message}`);
  process.exit(1);
});
