// What one harness run leaves in the shared servers: its PostgreSQL schema and its BullMQ
// prefix. Removed at the end of the run and on Ctrl-C (children.ts onInterrupt).
import { Client } from 'pg';
import { flushPrefix } from '@hookline/testing';

/** Flushes the run's queue prefix and drops its schema (`connectionString` without a schema parameter). */
export async function dropRunData(connectionString: string, schema: string, redisUrl: string, prefix: string): Promise<void> {
  await flushPrefix(prefix, redisUrl).catch(() => undefined);
  const c = new Client({ connectionString });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => c.end());
}
