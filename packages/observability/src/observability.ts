import type { Logger } from '@hookline/logger';
import { createMetrics, type Metrics, type ServiceName } from './metrics';
import { createTracer, type Tracer } from './tracer';

export interface Observability {
  metrics: Metrics;
  tracer: Tracer;
}

/** What a service's main.ts builds once: its metrics registry and its tracer. */
export function createObservability(service: ServiceName, config: { OTEL_EXPORTER_OTLP_ENDPOINT: string; OTEL_TRACES_SAMPLE_RATIO: number }, logger: Logger): Observability {
  return {
    metrics: createMetrics(service),
    tracer: createTracer({ service, logger, endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT, sampleRatio: config.OTEL_TRACES_SAMPLE_RATIO }),
  };
}
