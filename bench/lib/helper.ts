// Starts one of the harness's own helper processes (receiver, baseline servers) with an
// IPC channel and waits for its hello (its port).
import { ipcClient, type IpcClient } from './ipc';
import { nodeTs, startChild, type Child } from './children';

export interface Helper<H> {
  child: Child;
  ipc: IpcClient;
  hello: H;
}

export async function startHelper<H>(name: string, entry: string, env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Helper<H>> {
  const [cmd, args] = nodeTs(entry);
  const child = startChild(name, cmd, args, { env: { ...process.env, ...env }, ipc: true });
  const ipc = ipcClient(child.proc);
  let timer: NodeJS.Timeout | undefined;
  const hello = await Promise.race([
    ipc.hello as Promise<H>,
    child.exited.then((code) => Promise.reject(new Error(`${name} exited with ${code}: ${child.tail().slice(-2000)}`))),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms`)), timeoutMs))),
  ]).finally(() => clearTimeout(timer));
  return { child, ipc, hello };
}
