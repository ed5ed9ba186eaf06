// The shutdown helper every service wires: signals are emitted on this process as events
// (process.emit), and the exit is recorded instead of taken.
import { createLogger } from '@hookline/logger';
import { onShutdownSignal } from './shutdown-signal';

const logger = createLogger('http-test', 'error');
logger.silent = true;

let added: { signal: 'SIGTERM' | 'SIGINT'; listener: (...args: unknown[]) => void }[] = [];
/** Wires the helper and remembers its listeners, so that each test takes them off again. */
function wire(timeoutMs: number, close: () => Promise<void>): number[] {
  const exits: number[] = [];
  const before = { SIGTERM: process.listeners('SIGTERM'), SIGINT: process.listeners('SIGINT') };
  onShutdownSignal(logger, timeoutMs, close, { graceMs: 0, exit: (code) => void exits.push(code) });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    for (const listener of process.listeners(signal)) if (!before[signal].includes(listener)) added.push({ signal, listener: listener as (...args: unknown[]) => void });
  }
  return exits;
}
afterEach(() => {
  for (const { signal, listener } of added) process.off(signal, listener);
  added = [];
});

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

test('the first signal drains once and exits 0', async () => {
  let closes = 0;
  const exits = wire(60_000, async () => void closes++);
  process.emit('SIGTERM');
  await tick();
  expect([closes, exits]).toEqual([1, [0]]);
});

test('the same signal again while draining exits 1 at once, without waiting for the drain', async () => {
  let closes = 0;
  const exits = wire(60_000, () => (closes++, new Promise<void>(() => undefined)));
  process.emit('SIGINT');
  await tick();
  expect(exits).toEqual([]);
  process.emit('SIGINT');
  expect([closes, exits]).toEqual([1, [1]]);
});

test("the other signal does not cut the drain short (a terminal's Ctrl-C to the group plus pnpm start's SIGTERM)", async () => {
  let closes = 0;
  let finish: () => void = () => undefined;
  const exits = wire(60_000, () => (closes++, new Promise<void>((r) => (finish = r))));
  process.emit('SIGINT');
  process.emit('SIGTERM');
  await tick();
  expect([closes, exits]).toEqual([1, []]);
  finish();
  await tick();
  expect(exits).toEqual([0]);
});

test('a drain that outlasts its deadline exits 1', async () => {
  const exits = wire(20, () => new Promise<void>(() => undefined));
  process.emit('SIGTERM');
  await new Promise((r) => setTimeout(r, 100));
  expect(exits).toEqual([1]);
});
