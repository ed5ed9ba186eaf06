// bench/lib/stack.ts under supervision (as `pnpm chaos` runs it): a service that dies without
// the harness killing it is recorded and restarted; the harness's own kills and restarts
// (the fault schedule's) and the final close are not recorded.
import { waitFor } from '@hookline/testing';
import { startStack, type Stack } from '../bench/lib/stack';

jest.setTimeout(120_000);

let stack: Stack;
const events: string[] = [];

beforeAll(async () => {
  stack = await startStack({
    label: 'chaossup',
    databaseUrl: process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test',
    redisUrl: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    shipped: true,
    supervise: true,
    onSupervisorEvent: (line) => events.push(line),
  });
});
afterAll(async () => {
  await stack?.close();
});

test('a kill -9 the harness did not ask for is recorded, and the service restarted', async () => {
  const pid = stack.children.router!.pid;
  process.kill(pid, 'SIGKILL');
  await waitFor(() => stack.unexpectedExits[0]?.restartedAs ?? false, { timeoutMs: 60_000, what: 'the supervisor restarting the router' });
  expect(stack.unexpectedExits).toEqual([expect.objectContaining({ service: 'router', phase: 'running', pid, code: null, signal: 'SIGKILL', restartedAs: stack.children.router!.pid })]);
  expect(stack.children.router!.alive()).toBe(true);
  expect(stack.children.router!.pid).not.toBe(pid);
  expect(events.join('\n')).toMatch(/router \(pid \d+\) exited on its own/);
});

test("the harness's own kill -9 and restart (a fault) is not an unexpected exit", async () => {
  const before = stack.unexpectedExits.length;
  await stack.kill('deliverer', 'SIGKILL');
  await stack.start('deliverer');
  await stack.kill('ingest', 'SIGKILL');
  // Nothing restarts what the harness killed.
  await new Promise((r) => setTimeout(r, 1500));
  expect(stack.children.ingest).toBeUndefined();
  await stack.start('ingest');
  expect(stack.unexpectedExits).toHaveLength(before);
});

test('close stops every service without recording an exit', async () => {
  const before = stack.unexpectedExits.length;
  const s = stack;
  await s.close();
  expect(s.unexpectedExits).toHaveLength(before);
  stack = undefined as unknown as Stack;
});
