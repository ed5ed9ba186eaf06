// Starts Hookline's four services as separate processes on loopback, against a private
// PostgreSQL schema and Redis prefix, and offers a small API client for the tests.
import { createTestDatabase, freePort, seedTenant, startService, uniquePrefix, type SeededTenant, type ServiceName, type ServiceProcess, type TestDatabase } from '@hookline/testing';

export interface Stack {
  db: TestDatabase;
  prefix: string;
  env: Record<string, string>;
  services: Partial<Record<ServiceName, ServiceProcess>>;
  ingestPort: number;
  start(name: ServiceName): Promise<ServiceProcess>;
  stop(name: ServiceName, signal?: NodeJS.Signals): Promise<void>;
  close(): Promise<void>;
}

export async function createStack(label: string, extraEnv: Record<string, string> = {}, names: ServiceName[] = ['api', 'ingest', 'router', 'deliverer']): Promise<Stack> {
  const db = await createTestDatabase(label);
  const prefix = uniquePrefix(label);
  const ingestPort = await freePort();
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefix,
    SECRETS_KEY: 'test-secrets-key-0123456789abcdef',
    INGEST_PUBLIC_URL: `http://127.0.0.1:${ingestPort}`,
    SSRF_ALLOWLIST: '127.0.0.0/8,::1/128',
    RETRY_SCHEDULE_MS: '100,150,200,250',
    RECOVERY_AFTER_MS: '1000',
    RECOVERY_INTERVAL_MS: '500',
    DB_POOL_MAX: '4',
    ...extraEnv,
  };
  const services: Partial<Record<ServiceName, ServiceProcess>> = {};
  const stack: Stack = {
    db,
    prefix,
    env,
    services,
    ingestPort,
    async start(name) {
      const svc = await startService(name, env, name === 'ingest' ? ingestPort : undefined);
      services[name] = svc;
      return svc;
    },
    async stop(name, signal = 'SIGTERM') {
      await services[name]?.stop(signal);
      delete services[name];
    },
    async close() {
      await Promise.all(Object.values(services).map((s) => s?.stop('SIGTERM')));
      await db.drop();
    },
  };
  try {
    await Promise.all(names.map((n) => stack.start(n)));
  } catch (err) {
    await stack.close();
    throw err;
  }
  return stack;
}

/** A tiny API client bound to one tenant's key. */
export function apiClient(baseUrl: string, tenant: SeededTenant) {
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any; headers: Headers }> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'x-api-key': tenant.apiKey, 'x-tenant-id': tenant.tenantId, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };
  const t = `/v1/tenants/${tenant.tenantId}`;
  return {
    call,
    async ingester(body: Record<string, unknown> = {}) {
      const r = await call('POST', `${t}/ingesters`, { name: `ing-${Math.random().toString(36).slice(2, 8)}`, provider: 'generic', ...body });
      if (r.status !== 201) throw new Error(`create ingester: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as { id: string; hook_url: string };
    },
    async destination(url: string, body: Record<string, unknown> = {}) {
      const r = await call('POST', `${t}/destinations`, { name: `dst-${Math.random().toString(36).slice(2, 8)}`, url, ...body });
      if (r.status !== 201) throw new Error(`create destination: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as { id: string; signing_secret?: string };
    },
    async flow(ingesterId: string, destinationId: string, body: Record<string, unknown> = {}) {
      const r = await call('POST', `${t}/delivery-flows`, { name: `flw-${Math.random().toString(36).slice(2, 8)}`, endpoint: ingesterId, target: destinationId, ...body });
      if (r.status !== 201) throw new Error(`create flow: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as { id: string };
    },
    async deliveriesOf(eventId: string) {
      const r = await call('GET', `${t}/deliveries?event_id=${eventId}&limit=100`);
      if (r.status !== 200) throw new Error(`list deliveries: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.deliveries as Array<{ id: string; status: string; destination_id: string; attempt_count?: number }>;
    },
    async delivery(id: string) {
      return call('GET', `/v1/deliveries/${id}`);
    },
    async attempts(id: string) {
      const r = await call('GET', `/v1/deliveries/${id}/attempts`);
      if (r.status !== 200) throw new Error(`attempts: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.attempts as Array<{ status_code: number | null; duration_ms: number; started_at: string; number: number }>;
    },
  };
}

export async function postEvent(hookUrl: string, body: Buffer | string, headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<{ status: number; body: any }> {
  const res = await fetch(hookUrl, { method: 'POST', headers, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export { seedTenant };
