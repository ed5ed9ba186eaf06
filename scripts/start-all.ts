// `pnpm start`: applies migrations, bundles the services (`pnpm build`: what the image
// runs) and runs the four as separate processes against DATABASE_URL and REDIS_URL, with
// their output prefixed by service name. In production each service runs on its own
// (`pnpm start:<service>`, or the image).
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { loadConfig, baseEnv } from '@hookline/config';
import { migrate } from '@hookline/db';
import { bundleEntry, bundlePath } from './lib/bundle';
import { serviceNodeOptions } from './lib/entries';
import { ensureLocalDeps } from './lib/local-deps';

const ROOT = resolve(__dirname, '..');
const SERVICES = [
  { name: 'api', port: 8080 },
  { name: 'ingest', port: 8081 },
  { name: 'router', port: 8082 },
  { name: 'deliverer', port: 8083 },
] as const;

const entryOf = (name: string): string => `services/${name}/src/main.ts`;

function prefixLines(name: string, stream: NodeJS.ReadableStream, out: NodeJS.WritableStream): void {
  let buf = '';
  stream.on('data', (d: Buffer) => {
    buf += d.toString();
    const lines = buf.split('\n');
    buf = lines.pop() ?? '';
    for (const l of lines) out.write(`${name.padEnd(9)} | ${l}\n`);
  });
}

async function main(): Promise<void> {
  const config = loadConfig({ DATABASE_URL: baseEnv.DATABASE_URL, REDIS_URL: baseEnv.REDIS_URL });
  const log = (m: string): void => console.log(`hookline  | ${m}`);
  await ensureLocalDeps(config.DATABASE_URL, config.REDIS_URL, log);
  const applied = await migrate(config.DATABASE_URL, undefined, log);
  log(applied.length ? `${applied.length} migration(s) applied` : 'database schema is up to date');
  for (const s of SERVICES) await bundleEntry(entryOf(s.name), bundlePath(entryOf(s.name)));
  log(`bundled ${SERVICES.map((s) => s.name).join(', ')} into dist/`);
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (env.SSRF_ALLOWLIST === undefined) {
    // Local runs deliver to local receivers; deployments leave this empty (protection on).
    env.SSRF_ALLOWLIST = '127.0.0.0/8,::1/128';
    log('local mode: SSRF_ALLOWLIST=127.0.0.0/8,::1/128 (loopback destinations allowed)');
  }
  const children: ChildProcess[] = [];
  let stopping = false;
  const stopAll = (code: number): void => {
    if (stopping) return;
    stopping = true;
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    setTimeout(() => process.exit(code), 12_000).unref();
    Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r))))).then(() => process.exit(code));
  };
  for (const s of SERVICES) {
    const port = process.env[`${s.name.toUpperCase()}_PORT`] ?? String(s.port);
    const child = spawn(process.execPath, [resolve(ROOT, 'scripts/launch.cjs'), entryOf(s.name)], {
      cwd: ROOT,
      env: { ...env, NODE_OPTIONS: serviceNodeOptions(entryOf(s.name), process.env.NODE_OPTIONS), PORT: port },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    prefixLines(s.name, child.stdout!, process.stdout);
    prefixLines(s.name, child.stderr!, process.stderr);
    child.on('exit', (code, signal) => {
      if (!stopping) {
        log(`${s.name} exited (${signal ?? code}); stopping the others`);
        stopAll(1);
      }
    });
    children.push(child);
    log(`started ${s.name} on port ${port} (pid ${child.pid})`);
  }
  process.on('SIGINT', () => stopAll(0));
  process.on('SIGTERM', () => stopAll(0));
}

main().catch((err: Error) => {
  console.error(`hookline: ${err.message}`);
  process.exit(1);
});
