// scripts/launch.cjs (the image's ENTRYPOINT) and scripts/build.ts (`pnpm build`).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { shippedCommand } from '@hookline/testing';
import { ENTRIES, nodeOptionsFor, SERVICE_NODE_OPTIONS, serviceNodeOptions } from '../scripts/lib/entries';

const ROOT = resolve(__dirname, '..');

function run(command: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((res, rej) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', rej);
    child.on('exit', (code) => res({ code, out, err }));
  });
}

test('the launcher runs the bundle as the main module, passes the arguments on, and stack traces name the TypeScript source', async () => {
  const shipped = await shippedCommand('test/fixtures/launch-probe.ts');
  const r = await run(shipped.command, [...shipped.args, '--flag', 'x'], shipped.env);
  expect(r.code).toBe(1);
  const { heapLimitMb, ...report } = JSON.parse(r.out.trim()) as { isMain: boolean; argv1: string; args: string[]; heapLimitMb: number };
  expect(report).toEqual({ isMain: true, argv1: join(shipped.env['HOOKLINE_DIST_DIR']!, 'test/fixtures/launch-probe.js'), args: ['--flag', 'x'] });
  // SERVICE_NODE_OPTIONS: a 256 MB old space (the limit adds the young generation).
  expect(heapLimitMb).toBeGreaterThanOrEqual(256);
  expect(heapLimitMb).toBeLessThan(400);
  expect(r.err).toContain('probe failure');
  expect(r.err).toMatch(/failHere \(.*test\/fixtures\/launch-probe\.ts:4:\d+\)/);
});

test("the services' V8 flags come first, so that the user's NODE_OPTIONS overrides them", async () => {
  const router = 'services/router/src/main.ts';
  expect(serviceNodeOptions(router, undefined)).toBe(SERVICE_NODE_OPTIONS);
  expect(serviceNodeOptions(router, '  ')).toBe(SERVICE_NODE_OPTIONS);
  expect(serviceNodeOptions(router, '--max-old-space-size=1024 --trace-gc')).toBe(`${SERVICE_NODE_OPTIONS} --max-old-space-size=1024 --trace-gc`);
  const shipped = await shippedCommand('test/fixtures/launch-probe.ts');
  const r = await run(shipped.command, shipped.args, { ...shipped.env, NODE_OPTIONS: serviceNodeOptions('test/fixtures/launch-probe.ts', '--max-old-space-size=1024') });
  expect((JSON.parse(r.out.trim()) as { heapLimitMb: number }).heapLimitMb).toBeGreaterThanOrEqual(1024);
});

test('a missing bundle stops the launcher with exit 2, naming `pnpm build`', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'hookline-empty-dist-'));
  try {
    const r = await run(process.execPath, ['scripts/launch.cjs', 'services/api/src/main.ts'], { HOOKLINE_DIST_DIR: empty });
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${join(empty, 'services/api/src/main.js')} does not exist: run \`pnpm build\` first`);
    expect((await run(process.execPath, ['scripts/launch.cjs'])).code).toBe(2);
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});

test('pnpm build bundles every entry point, with progress, and refuses an unknown one', async () => {
  const out = mkdtempSync(join(tmpdir(), 'hookline-build-'));
  try {
    const tsx = resolve(ROOT, 'node_modules/.bin/tsx');
    const r = await run(tsx, ['scripts/build.ts', '--out', out]);
    expect(r.code).toBe(0);
    for (const [i, entry] of ENTRIES.entries()) {
      expect(r.out).toContain(`[${i + 1}/${ENTRIES.length}] ${entry} -> `);
      expect(existsSync(join(out, entry.replace(/\.ts$/, '.js')))).toBe(true);
      expect(existsSync(join(out, entry.replace(/\.ts$/, '.js.map')))).toBe(true);
    }
    const bad = await run(tsx, ['scripts/build.ts', '--out', out, 'services/nope/src/main.ts']);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('not an entry point: services/nope/src/main.ts');
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('the deliverer runs with larger semi-spaces than the other services, and they take effect', async () => {
  const deliverer = 'services/deliverer/src/main.ts';
  expect(nodeOptionsFor(deliverer)).toBe('--max-old-space-size=256 --max-semi-space-size=16');
  expect(nodeOptionsFor('services/api/src/main.ts')).toBe(SERVICE_NODE_OPTIONS);
  expect(serviceNodeOptions(deliverer, '--trace-gc')).toBe(`${nodeOptionsFor(deliverer)} --trace-gc`);
  // The heap limit is the old space plus the young generation (three semi-spaces' worth).
  const shipped = await shippedCommand('test/fixtures/launch-probe.ts');
  const limit = async (options: string): Promise<number> =>
    (JSON.parse((await run(shipped.command, shipped.args, { ...shipped.env, NODE_OPTIONS: options })).out.trim()) as { heapLimitMb: number }).heapLimitMb;
  expect((await limit(nodeOptionsFor(deliverer))) - (await limit(SERVICE_NODE_OPTIONS))).toBeGreaterThanOrEqual(16);
});
