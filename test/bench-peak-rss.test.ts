// Peak RSS per measurement window (bench/lib/proc-sampler.ts): the kernel's high-water
// mark, reset at the window's start through /proc/<pid>/clear_refs. A process that
// allocates 200 MB, frees it and idles: a window opened after the free does not see the
// peak (the mark since the process started would), a window that spans it does, even
// though the inner window reset the mark meanwhile; neither relies on a sample landing on
// the peak.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { ProcSampler, resetHighWaterMark } from '../bench/lib/proc-sampler';

const linux = existsSync('/proc/self/status');
let child: ChildProcess | undefined;
afterEach(() => void child?.kill('SIGKILL'));

const said = (c: ChildProcess, word: string): Promise<void> =>
  new Promise((resolve) => {
    const on = (d: Buffer): void => {
      if (d.toString().includes(word)) {
        c.stdout?.off('data', on);
        resolve();
      }
    };
    c.stdout?.on('data', on);
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

(linux ? test : test.skip)('a window peak is the high-water mark over the window, and nested windows keep their own', async () => {
  const code = `
    process.stdout.write('ready\\n');
    process.stdin.once('data', () => {
      let big = Buffer.alloc(200 * 1024 * 1024, 1);
      big = null;
      globalThis.gc();
      process.stdout.write('freed\\n');
    });
    setInterval(() => {}, 1000);`;
  child = spawn(process.execPath, ['--expose-gc', '-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  await said(child, 'ready');
  const pid = child.pid!;
  // Sampling far apart: no sample lands on the peak, which lasts as long as the allocation.
  const sampler = new ProcSampler(() => ({ kid: pid }), 60_000);
  sampler.start();
  const outer = sampler.window();
  const freed = said(child, 'freed');
  child.stdin!.write('go\n');
  await freed;
  await sleep(100);
  const inner = sampler.window();
  await sleep(200);
  const innerPeak = inner.end()['kid'];
  const outerPeak = outer.end()['kid'];
  sampler.stop();

  if (!resetHighWaterMark(pid)) {
    // Not permitted here: both fall back to the samples, and say so.
    expect(innerPeak?.peakRssFrom).toBe('sampled');
    return;
  }
  expect(innerPeak).toEqual(expect.objectContaining({ peakRssFrom: 'vmhwm' }));
  expect(innerPeak!.peakRssMb).toBeLessThan(150);
  expect(outerPeak).toEqual(expect.objectContaining({ peakRssFrom: 'vmhwm' }));
  expect(outerPeak!.peakRssMb).toBeGreaterThanOrEqual(200);
  // The samples alone (the old per-phase figure) missed it.
  expect(sampler.summary(0)['kid']?.peakRssMb ?? 0).toBeLessThan(150);
});
