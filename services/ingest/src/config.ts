import { baseEnv, ConfigError, MAX_TIMER_MS, type ConfigOf, type EnvSchema } from '@hookline/config';
import { observabilityEnv } from '@hookline/observability';
import { parseCidrList, type Cidr } from '@hookline/http';

/** Everything ingest reads from the environment (validated once, at boot, in main.ts). */
export const ingestEnv = {
  ...baseEnv,
  ...observabilityEnv,
  PORT: { type: 'integer', default: 8081, minimum: 0, maximum: 65535 },
  HOST: { type: 'string', default: '0.0.0.0' },
  INGEST_PUBLIC_URL: { type: 'string', default: 'http://127.0.0.1:8081', description: 'Base URL providers call; hook URLs are <this>/in/<ingester_id> and Twilio signs it' },
  PAYLOAD_LIMIT_BYTES: { type: 'integer', default: 262144, minimum: 1, description: 'Largest accepted body; larger ones get 413' },
  INGEST_MAX_BUFFERED_BYTES: {
    type: 'integer',
    default: 67108864,
    minimum: 1,
    description:
      'Request bodies held in memory at once, process-wide (64 MiB): a body reserves its Content-Length (a chunked one PAYLOAD_LIMIT_BYTES) from when it starts to be read until its request is answered; a request that would pass the cap gets 503 with Retry-After before its body is read. At least PAYLOAD_LIMIT_BYTES',
  },
  INGEST_MAX_CONNECTIONS: { type: 'integer', default: 4000, minimum: 1, description: 'Open client connections at most; past it a new connection is closed at once' },
  INGEST_REQUEST_TIMEOUT_MS: {
    type: 'integer',
    default: 10000,
    minimum: 1000,
    maximum: MAX_TIMER_MS,
    description: 'Longest time to receive a whole request, headers and body (checked every second, so up to 1 s more); past it the connection gets 408 and is closed',
  },
  SIGNATURE_TOLERANCE_SECONDS: { type: 'integer', default: 300, minimum: 1, description: 'Default timestamp tolerance (an ingester may set tolerance_seconds)' },
  INGESTER_CACHE_TTL_MS: { type: 'integer', default: 5000, minimum: 0, description: 'How long an ingester stays cached when no change is announced' },
  INGEST_DB_TIMEOUT_MS: { type: 'integer', default: 5000, minimum: 1, description: 'Longest wait for one PostgreSQL statement of a request; past it the request is answered 503 (a stalled database must not hold requests for ever)' },
  DEDUP_WINDOW_SECONDS: { type: 'integer', default: 86400, minimum: 1, description: 'How long an Idempotency-Key or provider delivery id dedupes' },
  INGEST_BATCH_MAX: { type: 'integer', default: 500, minimum: 1, maximum: 5000, description: 'Events per group-commit transaction' },
  INGEST_FLUSHES_IN_FLIGHT: { type: 'integer', default: 2, minimum: 1, maximum: 64, description: 'Group-commit transactions at once' },
  INGEST_ENQUEUE_TIMEOUT_MS: { type: 'integer', default: 2000, minimum: 1, description: 'Longest wait for a route enqueue before giving it up to the router recovery sweep' },
  INGEST_ROUTE_LINGER_MS: { type: 'integer', default: 10, minimum: 0, maximum: 1000, description: 'Committed event ids wait this long for more before their route job is sent (bigger jobs: less fixed cost per event downstream); 0 sends each commit at once' },
  INGEST_ROUTE_BATCH_MAX: { type: 'integer', default: 500, minimum: 1, maximum: 5000, description: 'Event ids per route job at most (a full job is sent without waiting)' },
  TRUSTED_PROXIES: { type: 'string', default: '', description: 'Comma-separated CIDRs whose X-Forwarded-For is believed' },
} as const satisfies EnvSchema;

export type IngestConfig = ConfigOf<typeof ingestEnv>;

/** TRUSTED_PROXIES as ranges; a bad entry stops the boot with a message naming the variable. */
export function trustedProxies(value: string): Cidr[] {
  const { cidrs, invalid } = parseCidrList(value.split(',').map((s) => s.trim()).filter(Boolean));
  if (invalid.length > 0) throw new ConfigError([`TRUSTED_PROXIES has entries that are not CIDRs: ${invalid.join(', ')}`]);
  return cidrs;
}
