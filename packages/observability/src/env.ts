import type { EnvSchema } from '@hookline/config';

/** Tracing and metrics variables every service reads; spread into its env schema (`{ ...baseEnv, ...observabilityEnv }`). */
export const observabilityEnv = {
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    type: 'string',
    default: '',
    description: 'OTLP/HTTP collector base URL (spans are posted as JSON to <this>/v1/traces); empty = no export, traceparent still propagates',
  },
  OTEL_TRACES_SAMPLE_RATIO: { type: 'number', default: 1, minimum: 0, maximum: 1, description: 'Share of traces exported, decided from the trace id so every service keeps the same traces' },
  METRICS_TOKEN: {
    type: 'string',
    default: '',
    description: 'When set, /metrics answers only requests with Authorization: Bearer <this> (401 otherwise); empty = open, keep the port private',
  },
} as const satisfies EnvSchema;

/** For the worker services, which sample their queues for the queue metrics. */
export const queueMetricsEnv = {
  QUEUE_METRICS_INTERVAL_MS: { type: 'integer', default: 5000, minimum: 100, description: 'How often queue depth and oldest-job age are read for /metrics' },
} as const satisfies EnvSchema;
