// Helpers for the edge tests: the agent as its own process, signed agent requests, and
// rows for deliveries that wait for a cluster.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { newId, type Pool } from '@hookline/db';
import { shownStatusSql } from '@hookline/delivery';
import { createLogger } from '@hookline/logger';
import type { Redis } from '@hookline/queues';
import { createSecretBox } from '@hookline/signing';
import { loadEdgeConfig } from '../services/api/src/edge/edge-config';
import { createEdgeDeps, type EdgeDeps } from '../services/api/src/edge/edge-deps';
import { freePort, waitFor } from '@hookline/testing';

const ROOT = resolve(__dirname, '..');
// The package's own command, one node process (tsx registered in it): SIGKILL kills the agent itself.
const BIN = resolve(ROOT, 'packages/edge/bin/hookline-edge.js');
export const SECRETS_KEY = 'test-secrets-key-0123456789abcdef';

export interface AgentProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * A preload that moves the process's clock by `ms`: an agent host whose clock is off.
 * `Date.now`, and `new Date()` and `Date()` without an argument, which do not go through
 * `Date.now`; a Date made from a value, Date.parse and instanceof stay as they are.
 */
function skewedClock(ms: number): string {
  const file = join(mkdtempSync(join(tmpdir(), 'edge-clock-')), 'skew.cjs');
  writeFileSync(
    file,
    `const RealDate = Date; const now = RealDate.now; const skewed = () => now() + ${Math.trunc(ms)};
globalThis.Date = new Proxy(RealDate, {
  construct: (target, args, newTarget) => Reflect.construct(target, args.length ? args : [skewed()], newTarget),
  apply: () => new RealDate(skewed()).toString(),
});
RealDate.now = skewed;
`,
  );
  return `--require ${file}`;
}

/**
 * Starts hookline-edge (`hookline-edge`, packages/edge/bin) on loopback; `ready` waits for
 * /readyz (service reached); `clockSkewMs` runs it with its clock that far off.
 */
export async function startAgent(env: Record<string, string>, opts: { ready?: boolean; clockSkewMs?: number } = {}): Promise<AgentProcess> {
  const port = await freePort();
  let out = '';
  const clock = opts.clockSkewMs ? { NODE_OPTIONS: skewedClock(opts.clockSkewMs) } : {};
  const child = spawn(process.execPath, [BIN], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), EDGE_POLL_WAIT_SECONDS: '2', EDGE_BACKOFF_BASE_MS: '100', EDGE_BACKOFF_MAX_MS: '500', ...clock, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = `http://127.0.0.1:${port}`;
  const agent: AgentProcess = {
    child,
    url,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  if (opts.ready !== false) {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`agent exited with ${child.exitCode}: ${out.slice(-2000)}`);
        return (await fetch(`${url}/readyz`).catch(() => null))?.status === 200;
      },
      { timeoutMs: 30_000, what: 'the agent to reach the service' },
    ).catch(async (err: Error) => {
      await agent.stop('SIGKILL');
      throw new Error(`${err.message}\n${out.slice(-3000)}`);
    });
  }
  return agent;
}

/** `X-Service-Signature` over `<t>.<body>` with a cluster key, as an agent signs. */
export function signEdge(key: string, body: string, t = Math.floor(Date.now() / 1000)): Record<string, string> {
  const v1 = createHmac('sha256', key).update(`${t}.`).update(body).digest('hex');
  return { 'x-service-timestamp': String(t), 'x-service-signature': `t=${t},v1=${v1}` };
}

export interface EdgeCall {
  status: number;
  text: string;
  // The tests read arbitrary JSON.
  body: any;
}

/** A signed POST to an edge endpoint; `headers` override the signature (bad-signature tests). */
export async function edgePost(base: string, path: string, key: string, payload: Record<string, unknown>, headers: Record<string, string> = {}): Promise<EdgeCall> {
  const body = JSON.stringify({ agent_id: 'test-agent', agent_version: 'test', nonce: randomBytes(8).toString('hex'), ...payload });
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...signEdge(key, body), ...headers }, body });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : null };
}

/** A cluster, straight into the database, with its plain key and the key as stored (`sealed`: EdgeCluster.signedWith). */
export async function insertCluster(pool: Pool, tenantId: string, opts: { lastSeenAt?: Date | null } = {}): Promise<{ id: string; key: string; sealed: string }> {
  const id = newId('cls');
  const key = `hkc_${randomBytes(32).toString('base64url')}`;
  const sealed = createSecretBox(SECRETS_KEY).seal(key);
  await pool.query(`INSERT INTO clusters (id, tenant_id, name, key_encrypted, last_seen_at) VALUES ($1, $2, $3, $4, $5)`, [id, tenantId, `c-${id}`, sealed, opts.lastSeenAt ?? null]);
  return { id, key, sealed };
}

export interface WaitingDelivery {
  deliveryId: string;
  eventId: string;
  destinationId: string;
}

/** A destination of the cluster, an event with its payload, and one pending delivery of it. */
export async function insertEdgeDelivery(
  pool: Pool,
  tenantId: string,
  clusterId: string,
  opts: { url?: string; body?: Buffer | null; config?: Record<string, unknown>; nextAttemptAt?: Date; destinationId?: string; secret?: string } = {},
): Promise<WaitingDelivery> {
  let destinationId = opts.destinationId;
  if (!destinationId) {
    destinationId = newId('dst');
    const secrets = opts.secret ? [createSecretBox(SECRETS_KEY).seal(opts.secret)] : [];
    await pool.query(
      `INSERT INTO destinations (id, tenant_id, cluster_id, name, url, config, secrets, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, now())`,
      [destinationId, tenantId, clusterId, `d-${destinationId}`, opts.url ?? 'http://10.20.30.40:8080/hook', JSON.stringify(opts.config ?? {}), secrets],
    );
  }
  const ingesterId = newId('ing');
  await pool.query(`INSERT INTO ingesters (id, tenant_id, name, provider, updated_at) VALUES ($1, $2, $3, 'generic', now())`, [ingesterId, tenantId, `i-${ingesterId}`]);
  const flowId = newId('flw');
  await pool.query(`INSERT INTO delivery_flows (id, tenant_id, name, ingester_id, destination_id, updated_at) VALUES ($1, $2, $3, $4, $5, now())`, [flowId, tenantId, `f-${flowId}`, ingesterId, destinationId]);
  const eventId = newId('evt');
  await pool.query(`INSERT INTO events (id, tenant_id, ingester_id, type, status, correlation_id) VALUES ($1, $2, $3, 'thing.happened', 'filtered', $4)`, [eventId, tenantId, ingesterId, randomBytes(16).toString('hex')]);
  if (opts.body !== null) {
    await pool.query(`INSERT INTO event_payloads (event_id, tenant_id, content_type, body) VALUES ($1, $2, 'application/json', $3)`, [eventId, tenantId, opts.body ?? Buffer.from('{"hello":"edge"}')]);
  }
  const deliveryId = newId('dlv');
  await pool.query(`INSERT INTO deliveries (id, tenant_id, event_id, flow_id, destination_id, next_attempt_at) VALUES ($1, $2, $3, $4, $5, $6)`, [deliveryId, tenantId, eventId, flowId, destinationId, opts.nextAttemptAt ?? new Date()]);
  return { deliveryId, eventId, destinationId };
}

export interface DeliveryRow {
  /** As the API shows it: `delivering` while a live lease holds it. */
  status: string;
  /** As stored: a held delivery keeps its claimable status. */
  stored_status: string;
  attempt_count: number;
  lease_owner: string | null;
  next_attempt_at: Date;
}

export async function deliveryRow(pool: Pool, id: string): Promise<DeliveryRow> {
  const { rows } = await pool.query<DeliveryRow>(`SELECT ${shownStatusSql('d')} AS status, d.status::text AS stored_status, attempt_count, lease_owner, next_attempt_at FROM deliveries d WHERE id = $1`, [id]);
  return rows[0]!;
}

export async function attemptsOf(pool: Pool, id: string): Promise<{ number: number; status_code: number | null; error_kind: string | null; via: string; response_body: string | null }[]> {
  const { rows } = await pool.query(`SELECT number, status_code, error_kind, via, response_body FROM delivery_attempts WHERE delivery_id = $1 ORDER BY number`, [id]);
  return rows;
}

/** An app listening on an ephemeral loopback port, with the server-side sockets it accepted (to find a client's). */
export async function listenTracked(app: { listen(port: number, host: string, cb: () => void): Server }): Promise<{ server: Server; url: string; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  server.on('connection', (s) => sockets.push(s));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sockets };
}

/** Closes a server listenTracked made (its open connections too); nothing when it was never made. */
export async function closeTracked(server: Server | undefined): Promise<void> {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
}

/**
 * Runs `during` while every lease statement is blocked: a transaction holds an exclusive
 * lock on delivery_flows, which only the lease statement (of the edge requests) reads. It
 * returns once a lease statement waits on that lock; the lock is released after `during`.
 */
export async function withLeaseStatementBlocked(pool: Pool, start: () => void, during: () => Promise<void>): Promise<void> {
  const holder = await pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE delivery_flows IN ACCESS EXCLUSIVE MODE');
    const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    start();
    await waitFor(
      async () => (await pool.query(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE '%WITH signer AS%'`, [holderPid])).rowCount === 1,
      { what: 'the lease statement to wait on the lock' },
    );
    await during();
    await holder.query('COMMIT');
  } catch (err) {
    await holder.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    holder.release();
  }
}

/** The edge gate tests' breaker cooldown: one no test waits for. */
export const GATE_COOLDOWN_MS = 600_000;
/** Leases far longer than any test; three failures open a circuit; a cooldown no test waits for. */
export const GATE_ENV: Record<string, string> = { SECRETS_KEY, EDGE_LEASE_MS: '600000', EDGE_WORK_POLL_MS: '50', BREAKER_FAILURE_THRESHOLD: '3', BREAKER_COOLDOWN_MS: String(GATE_COOLDOWN_MS) };

/** The edge endpoints' dependencies over a test api's schema and prefix: their code called directly, with any Redis client. */
export function gateEdgeDeps(h: { db: { pool: Pool }; prefix: string }, redis: Redis, label: string, env: Record<string, string> = {}): EdgeDeps {
  const draining = new AbortController().signal;
  return createEdgeDeps({ pool: h.db.pool, redis, prefix: h.prefix, logger: createLogger(label, 'error'), box: createSecretBox(SECRETS_KEY), draining }, loadEdgeConfig({ ...GATE_ENV, ...env }));
}

/** A Redis client that counts the calls made through it (each one a round trip: no pipelines here). */
export function countedRedis(redis: Redis): { redis: Redis; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(redis, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        calls.push(String(prop));
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { redis: proxy, calls };
}

/** A Redis client whose scripts fail as with the connection gone; every other command goes through. */
export function scriptsFailing(redis: Redis): Redis {
  return new Proxy(redis, {
    get(target, prop, receiver) {
      if (prop === 'evalsha' || prop === 'eval') return () => Promise.reject(new Error('Connection is closed.'));
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/** A logger that keeps its warnings' messages and drops everything else. */
export function warningLogger(): { logger: EdgeDeps['logger']; warnings: string[] } {
  const warnings: string[] = [];
  const quiet = (): void => undefined;
  const logger = { warn: (msg: string) => warnings.push(msg), info: quiet, debug: quiet, error: quiet, child: () => logger };
  return { logger: logger as unknown as EdgeDeps['logger'], warnings };
}
