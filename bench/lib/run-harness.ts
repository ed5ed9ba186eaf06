// Runs `pnpm bench` / `pnpm chaos` (or another bench script) as a child process and collects its output (the CI
// smoke tests use this); SIGINT after `timeoutMs`, which makes the harness clean up.
import { spawn } from 'node:child_process';
import { ROOT } from './children';

export function runHarness(entry: 'bench/run.ts' | 'bench/chaos.ts' | 'bench/deliver-job-cost.ts', args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGINT'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}
