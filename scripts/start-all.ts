// `pnpm start`: applies migrations, bundles the services (`pnpm build`: what the image
// runs) and runs the four as separate processes against DATABASE_URL and REDIS_URL, with
// their output prefixed by service name. In production each service runs on its own
// (`pnpm start:<service>`, or the image).
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { loadConfig, baseEnv, type EnvSchema } from '@hookline/config';
import { bundleEntry, bundlePath } from './lib/bundle';
import { serviceNodeOptions } from './lib/entries';
import { ensureLocalDeps } from './lib/local-deps';
import { migrate } from '@hookline/db';

const ROOT = resolve(__dirname, '..');
const SERVICES = ['api', 'ingest', 'router', 'deliverer'] as const;

const port = (fallback: number) => ({ type: 'integer', default: fallback, minimum: 1, maximum: 65535 }) as const;
const startEnv = {
  DATABASE_URL: baseEnv.DATABASE_URL,
  REDIS_URL: baseEnv.REDIS_URL,
  SHUTDOWN_TIMEOUT_MS: baseEnv.SHUTDOWN_TIMEOUT_MS,
  API_PORT: port(8080),
  INGEST_PORT: port(8081),
  ROUTER_PORT: port(8082),
  DELIVERER_PORT: port(8083),
} as const satisfies EnvSchema;

const entryOf = (name: string): string => `services/${name}/src/main.ts`;

function prefixLines(name: string, stream: NodeJS.ReadableStream, out: NodeJS.WritableStream): void {
  let buf = '';
  const write = (l: string): void => void out.write(`${name.padEnd(9)} | ${l}\n`);
  stream.on('data', (d: Buffer) => {
    buf += d.toString();
    const lines = buf.split('\n');
    buf = lines.pop() ?? '';
    lines.forEach(write);
  });
  // A last line without a newline (a crash message) is shown too.
  stream.on('end', () => buf && write(buf));
}

// A child that could not be spawned has no pid and never emits 'exit'.
const running = (c: ChildProcess): boolean => c.pid !== undefined && c.exitCode === null && c.signalCode === null;

async function main(): Promise<void> {
  const config = loadConfig(startEnv);
  const log = (m: string): void => console.log(`hookline  | ${m}`);
  await ensureLocalDeps(config.DATABASE_URL, config.REDIS_URL, log);
  const applied = await migrate(config.DATABASE_URL, undefined, log);
  log(applied.length ? `${applied.length} migration(s) applied` : 'database schema is up to date');
  // scripts/launch.cjs runs the bundles of HOOKLINE_DIST_DIR when it is set: build those.
  const dist = process.env.HOOKLINE_DIST_DIR ? resolve(process.env.HOOKLINE_DIST_DIR) : undefined;
  for (const name of SERVICES) await bundleEntry(entryOf(name), bundlePath(entryOf(name), dist));
  log(`bundled ${SERVICES.join(', ')} into ${dist ?? 'dist/'}`);
  const ports = { api: config.API_PORT, ingest: config.INGEST_PORT, router: config.ROUTER_PORT, deliverer: config.DELIVERER_PORT };
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (env.SSRF_ALLOWLIST === undefined) {
    // Local runs deliver to local receivers; deployments leave this empty (protection on).
    env.SSRF_ALLOWLIST = '127.0.0.0/8,::1/128';
    log('local mode: SSRF_ALLOWLIST=127.0.0.0/8,::1/128 (loopback destinations allowed)');
  }
  // Hook URLs the api hands out (and Twilio signatures) name ingest's port, also a moved one.
  env.INGEST_PUBLIC_URL ||= `http://127.0.0.1:${ports.ingest}`;
  // The discovery documents link to the api under its own public URL: a moved api port too.
  env.API_PUBLIC_URL ||= `http://127.0.0.1:${ports.api}`;

  const children: ChildProcess[] = [];
  let stopping = false;
  const stopAll = (code: number): void => {
    if (stopping) {
      // A second Ctrl-C: do not wait for the drains.
      for (const c of children) if (running(c)) c.kill('SIGKILL');
      return;
    }
    stopping = true;
    for (const c of children) if (running(c)) c.kill('SIGTERM');
    // The services drain within SHUTDOWN_TIMEOUT_MS (and force their own exit 2 s later);
    // one still running after that is killed, never left behind.
    const deadline = setTimeout(() => {
      for (const c of children) {
        if (!running(c)) continue;
        log(`pid ${c.pid} did not stop; killing it`);
        c.kill('SIGKILL');
      }
    }, config.SHUTDOWN_TIMEOUT_MS + 5_000);
    deadline.unref();
    void Promise.all(children.map((c) => new Promise((r) => (running(c) ? c.once('exit', r) : r(null))))).then(() => {
      log(code === 0 ? 'stopped' : 'stopped (a service had exited)');
      process.exit(code);
    });
  };
  process.on('SIGINT', () => stopAll(0));
  process.on('SIGTERM', () => stopAll(0));
  for (const name of SERVICES) {
    const child = spawn(process.execPath, [resolve(ROOT, 'scripts/launch.cjs'), entryOf(name)], {
      cwd: ROOT,
      env: { ...env, NODE_OPTIONS: serviceNodeOptions(entryOf(name), process.env.NODE_OPTIONS), PORT: String(ports[name]) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    prefixLines(name, child.stdout!, process.stdout);
    prefixLines(name, child.stderr!, process.stderr);
    child.on('error', (err) => {
      log(`${name} could not be started: ${err.message}; stopping the others`);
      stopAll(1);
    });
    child.on('exit', (code, signal) => {
      if (!stopping) {
        log(`${name} exited (${signal ?? code}); stopping the others`);
        stopAll(1);
      }
    });
    children.push(child);
    log(`started ${name} on port ${ports[name]} (pid ${child.pid})`);
  }
}

main().catch((err: Error) => {
  console.error(`hookline: ${err.message}`);
  process.exit(1);
});
