// Request/response over the Node IPC channel between the harness and its helper processes
// (receivers), so that counting deliveries never shares an event loop with the load generator.
import type { ChildProcess } from 'node:child_process';

interface Request {
  id: number;
  cmd: string;
  arg?: unknown;
}
interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

/** In the helper: answer commands from the parent; `ready` is sent once with `hello`. */
export function serveIpc(handlers: Record<string, (arg: unknown) => unknown>, hello: unknown): void {
  if (!process.send) throw new Error('this process must be started with an IPC channel');
  process.on('message', (m: Request) => {
    const h = handlers[m.cmd];
    let reply: Reply;
    try {
      reply = h ? { id: m.id, ok: true, value: h(m.arg) } : { id: m.id, ok: false, error: `unknown command ${m.cmd}` };
    } catch (err) {
      reply = { id: m.id, ok: false, error: (err as Error).message };
    }
    process.send?.(reply);
  });
  // The helper dies with its parent (even after a kill -9 of the harness).
  process.on('disconnect', () => process.exit(0));
  process.send({ id: 0, ok: true, value: hello } satisfies Reply);
}

export interface IpcClient {
  hello: Promise<unknown>;
  call<T>(cmd: string, arg?: unknown, timeoutMs?: number): Promise<T>;
}

export function ipcClient(proc: ChildProcess): IpcClient {
  let next = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let helloResolve: (v: unknown) => void = () => undefined;
  const hello = new Promise<unknown>((r) => (helloResolve = r));
  proc.on('message', (m: Reply) => {
    if (m.id === 0) return helloResolve(m.value);
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.ok) w.resolve(m.value);
    else w.reject(new Error(m.error));
  });
  return {
    hello,
    call<T>(cmd: string, arg?: unknown, timeoutMs = 30_000): Promise<T> {
      const id = next++;
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error(`ipc ${cmd} timed out`));
        }, timeoutMs);
        waiting.set(id, {
          resolve: (v) => {
            clearTimeout(timer);
            resolve(v as T);
          },
          reject: (e) => {
            clearTimeout(timer);
            reject(e);
          },
        });
        proc.send({ id, cmd, arg } satisfies Request);
      });
    },
  };
}
