// Baseline (c), the durable floor: its one table. Every event is a row holding its exact
// bytes; the row is written before the 202 and marked delivered once every target answered
// 2xx. Only a primary key: no index the floor does not need.
export const FLOOR_TABLE = 'floor_events';

export const floorDdl = (schema: string): string[] => [
  `CREATE SCHEMA IF NOT EXISTS "${schema}"`,
  `CREATE TABLE IF NOT EXISTS "${schema}".${FLOOR_TABLE} (id text PRIMARY KEY, route text NOT NULL, ingested_at bigint NOT NULL, body bytea NOT NULL, delivered_at timestamptz)`,
];

export const floorEnv = (): { databaseUrl: string; schema: string; redisUrl: string; prefix: string } => ({
  databaseUrl: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test',
  schema: process.env.FLOOR_SCHEMA ?? 'floor',
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  prefix: process.env.QUEUE_PREFIX ?? '{floor}',
});
