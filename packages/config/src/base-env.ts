import type { ConfigOf, EnvSchema } from './load-config';

/** The longest delay setTimeout takes: a longer one fires after 1 ms (bounds timer variables). */
export const MAX_TIMER_MS = 2_147_483_647;

/** Variables every service reads. Each service extends this with its own. */
export const baseEnv = {
  DATABASE_URL: {
    type: 'string',
    default: 'postgresql://postgres@127.0.0.1:5432/test',
    // A URL (a bare host or a typo failed later as "Invalid URL"), and a schema name that is
    // one identifier: it is written into CREATE SCHEMA and the search_path.
    pattern: '^(?![^#]*[?&]schema=[^&#]*[^A-Za-z0-9_&#])postgres(ql)?://\\S+$',
    description: 'a postgresql:// URL; ?schema=name (letters, digits, _) selects a schema',
  },
  REDIS_URL: { type: 'string', default: 'redis://127.0.0.1:6379', pattern: '^rediss?://\\S+$', description: 'a redis:// or rediss:// URL (Redis for BullMQ)' },
  REDIS_CLUSTER_NODES: {
    type: 'string',
    default: '',
    pattern: '^$|^([^,:\\s\\[\\]]+|\\[[0-9a-fA-F:]+\\]):\\d{1,5}(,([^,:\\s\\[\\]]+|\\[[0-9a-fA-F:]+\\]):\\d{1,5})*$',
    description: 'Redis Cluster seed nodes (host:port,…); when set, a Cluster client is used and REDIS_URL only gives credentials and TLS',
  },
  REDIS_COMMAND_TIMEOUT_MS: {
    type: 'integer',
    default: 5000,
    minimum: 1,
    maximum: MAX_TIMER_MS,
    description:
      'Longest wait for the reply to one Redis command of a producer connection (rate limits, circuit breaker, enqueues, readiness); past it the command fails and its caller falls back as when Redis is down (a stalled Redis must not hold requests for ever). Worker and subscriber connections have none',
  },
  QUEUE_PREFIX: { type: 'string', default: '{hookline}', description: 'BullMQ key prefix; braces make a Redis Cluster hash tag' },
  LOG_LEVEL: { type: 'string', default: 'info', enum: ['error', 'warn', 'info', 'debug'] },
  DB_POOL_MAX: { type: 'integer', default: 10, minimum: 1, maximum: 200, description: 'PostgreSQL connections per process' },
  SECRETS_KEY: {
    type: 'string',
    default: 'hookline-dev-secrets-key-change-me',
    minLength: 16,
    description: 'Key that encrypts signing secrets at rest (set a random 32+ char value in production)',
    // The default, docker-compose.yml's former default and the Kubernetes example secret
    // (deploy/kustomize/base/secrets.example.yaml): with NODE_ENV=production a service refuses to boot with one.
    publicValues: ['hookline-dev-secrets-key-change-me', 'change-me-to-a-long-random-value', 'EXAMPLE-ONLY-replace-with-openssl-rand-base64-32'],
  },
  SHUTDOWN_TIMEOUT_MS: { type: 'integer', default: 10000, minimum: 0, maximum: 3_600_000, description: 'graceful drain deadline on SIGTERM (at most an hour)' },
} as const satisfies EnvSchema;

export type BaseConfig = ConfigOf<typeof baseEnv>;
