import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { freePort } from './free-port';
import { shippedCommand } from './shipped';
import { waitFor } from './wait-for';

export type ServiceName = 'ingest' | 'router' | 'deliverer' | 'api';

export interface ServiceProcess {
  name: ServiceName;
  port: number;
  url: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM (graceful) or SIGKILL; resolves when the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const ROOT = resolve(__dirname, '../../..');

/** Starts one service as its own process on loopback, as the image runs it (bundle + launcher), and waits for /readyz. */
export async function startService(name: ServiceName, env: Record<string, string>, fixedPort?: number): Promise<ServiceProcess> {
  const port = fixedPort ?? (await freePort());
  let out = '';
  const shipped = await shippedCommand(`services/${name}/src/main.ts`);
  const child = spawn(shipped.command, shipped.args, {
    cwd: ROOT,
    env: { ...process.env, ...shipped.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${out.slice(-2000)}`);
        const res = await fetch(`${url}/readyz`).catch(() => null);
        return res?.status === 200;
      },
      { timeoutMs: 30_000, what: `${name} to become ready` },
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n${out.slice(-3000)}`);
  }
  return {
    name,
    port,
    url,
    child,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
