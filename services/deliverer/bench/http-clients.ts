// Outbound HTTP client micro-benchmark: the same 1 KB POST, a fixed number of times, at a
// fixed concurrency, to a receiver on 127.0.0.1 running in its own process. Stops by itself.
//
//   pnpm exec tsx services/deliverer/bench/http-clients.ts [requests=20000] [concurrency=100]
import { spawn } from 'node:child_process';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Pool, request as undiciRequest } from 'undici';

const REQUESTS = Number(process.argv[2] ?? 20_000);
const CONCURRENCY = Number(process.argv[3] ?? 100);
const BODY = Buffer.from(JSON.stringify({ type: 'invoice.paid', data: { pad: 'x'.repeat(960) } }));
const HEADERS = { 'content-type': 'application/json' };

setTimeout(() => {
  console.error('benchmark took too long; stopping');
  process.exit(1);
}, 300_000).unref();

const RECEIVER = `
const http = require('node:http');
const s = http.createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('ok'); }); });
s.keepAliveTimeout = 30000;
s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;

type Send = () => Promise<void>;

// got is typed for ESM resolution only; this is the one call the benchmark makes.
const GOT: string = 'got';
interface GotLike {
  post(url: string, options: Record<string, unknown>): Promise<unknown>;
}

interface Result {
  name: string;
  rps: number;
  /** Client CPU (user + system) per request: what the deliverer pays, whatever the receiver. */
  cpuUs: number;
}

async function run(name: string, send: Send): Promise<Result> {
  const go = async (n: number): Promise<number> => {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < n) await send();
      }),
    );
    return performance.now() - t0;
  };
  await go(Math.min(1000, REQUESTS)); // warm-up: connections, JIT
  const cpu0 = process.cpuUsage();
  const ms = await go(REQUESTS);
  const cpu = process.cpuUsage(cpu0);
  return { name, rps: Math.round((REQUESTS / ms) * 1000), cpuUs: Math.round((cpu.user + cpu.system) / REQUESTS) };
}

function nodeHttp(port: number): Send {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: CONCURRENCY });
  return () =>
    new Promise<void>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/', method: 'POST', headers: { ...HEADERS, 'content-length': BODY.length }, agent }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end(BODY);
    });
}

async function main(): Promise<void> {
  const child = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  const origin = `http://127.0.0.1:${port}`;
  const results: Result[] = [];
  try {
    const pool = new Pool(origin, { connections: CONCURRENCY });
    results.push(
      await run('undici Pool', async () => {
        const r = await pool.request({ path: '/', method: 'POST', headers: HEADERS, body: BODY });
        await r.body.text();
      }),
    );
    await pool.close();
    results.push(
      await run('undici.request (global Agent)', async () => {
        const r = await undiciRequest(origin, { method: 'POST', headers: HEADERS, body: BODY });
        await r.body.text();
      }),
    );
    results.push(await run('node:http keepAlive Agent', nodeHttp(port)));
    results.push(
      await run('fetch (built-in)', async () => {
        const r = await fetch(origin, { method: 'POST', headers: HEADERS, body: BODY });
        await r.text();
      }),
    );
    // got 14 is ESM-only; a dynamic import loads it from this CommonJS script.
    const got = await import(GOT)
      .then((m: { default: GotLike }) => m.default)
      .catch(() => null);
    if (got) {
      const agent = new HttpAgent({ keepAlive: true, maxSockets: CONCURRENCY });
      results.push(await run('got 14 (keepAlive agent)', async () => void (await got.post(origin, { body: BODY, headers: HEADERS, agent: { http: agent }, retry: { limit: 0 } }))));
    } else {
      console.log('got is not installed; skipped');
    }
  } finally {
    child.kill();
  }
  console.log(`\n${REQUESTS} POSTs of ${BODY.length} bytes, ${CONCURRENCY} concurrent, receiver in its own process (node ${process.version})\n`);
  for (const r of results.sort((a, b) => b.rps - a.rps)) console.log(`${r.name.padEnd(32)} ${String(r.rps).padStart(7)} req/s ${String(r.cpuUs).padStart(6)} µs client CPU/req`);
  process.exit(0);
}

void main();
