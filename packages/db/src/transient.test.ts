import { isDbUnreachable, isLockConflict, isTransientDbError, retryTransient, retryingDeadlocks } from './transient';

test('connection-class failures and lock conflicts are transient; statement errors are not', () => {
  for (const code of ['08006', '08001', '57P01', '57P03', '53300', 'ECONNREFUSED', 'ECONNRESET', '40P01', '40001']) expect(isTransientDbError({ code })).toBe(true);
  expect(isTransientDbError(new Error('Connection terminated unexpectedly'))).toBe(true);
  for (const code of ['23505', '42P01', '22P02', '40P02', '55P03']) expect(isTransientDbError({ code })).toBe(false);
  expect(isTransientDbError(new Error('syntax error'))).toBe(false);
  expect(isTransientDbError(null)).toBe(false);
});

test("Prisma's errors (the api's pg adapter): unreachable, timed out, closed or conflicting are transient; the rest are not", () => {
  for (const code of ['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2034']) expect(isTransientDbError({ code })).toBe(true);
  const adapter = (cause: unknown) => ({ code: 'P2010', meta: { driverAdapterError: { name: 'DriverAdapterError', cause } } });
  for (const kind of ['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']) expect(isTransientDbError(adapter({ kind }))).toBe(true);
  expect(isTransientDbError(adapter({ kind: 'postgres', code: '57P01' }))).toBe(true);
  for (const cause of [{ kind: 'postgres', code: '23505' }, { kind: 'postgres', code: 'P0001' }, { kind: 'UniqueConstraintViolation' }, undefined]) expect(isTransientDbError(adapter(cause))).toBe(false);
  // A trigger's RAISE EXCEPTION (SQLSTATE P0001) from pg directly is not Prisma's.
  for (const code of ['P2002', 'P2025', 'P0001']) expect(isTransientDbError({ code })).toBe(false);
});

test('retryTransient retries transient failures until one succeeds', async () => {
  let calls = 0;
  const retried: number[] = [];
  const out = await retryTransient(
    async () => {
      calls++;
      if (calls < 3) throw Object.assign(new Error('down'), { code: '57P01' });
      return 'ok';
    },
    { deadlineMs: 5000, initialDelayMs: 1, onRetry: (_e, n) => retried.push(n) },
  );
  expect(out).toBe('ok');
  expect(calls).toBe(3);
  expect(retried).toEqual([1, 2]);
});

test('retryTransient rethrows a statement error at once, and a transient one past the deadline', async () => {
  let calls = 0;
  const unique = Object.assign(new Error('duplicate key'), { code: '23505' });
  await expect(retryTransient(async () => { calls++; throw unique; }, { deadlineMs: 5000, initialDelayMs: 1 })).rejects.toBe(unique);
  expect(calls).toBe(1);
  calls = 0;
  const down = Object.assign(new Error('down'), { code: 'ECONNREFUSED' });
  await expect(retryTransient(async () => { calls++; throw down; }, { deadlineMs: 30, initialDelayMs: 10, maxDelayMs: 10 })).rejects.toBe(down);
  expect(calls).toBeGreaterThan(1);
  expect(calls).toBeLessThan(10);
});

test('retryingDeadlocks runs the transaction again after a deadlock or serialization failure, up to its tries, and nothing else', async () => {
  expect(isLockConflict({ code: '40P01' })).toBe(true);
  expect(isLockConflict({ code: '08006' })).toBe(false);
  let calls = 0;
  await expect(
    retryingDeadlocks(async () => {
      calls++;
      if (calls === 1) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      if (calls === 2) throw Object.assign(new Error('could not serialize'), { code: '40001' });
      return 'ok';
    }),
  ).resolves.toBe('ok');
  expect(calls).toBe(3);
  calls = 0;
  const deadlock = Object.assign(new Error('deadlock detected'), { code: '40P01' });
  await expect(retryingDeadlocks(async () => { calls++; throw deadlock; }, 2)).rejects.toBe(deadlock);
  expect(calls).toBe(2);
  calls = 0;
  const down = Object.assign(new Error('down'), { code: '57P01' });
  await expect(retryingDeadlocks(async () => { calls++; throw down; })).rejects.toBe(down);
  expect(calls).toBe(1);
});

test('unreachable (nothing applied, for sure) is a subset of transient: not connected, or rolled back whole', () => {
  for (const code of ['08001', '08004', '57P03', '53300', 'ECONNREFUSED', 'ENOTFOUND', '40P01', '40001', 'P1001', 'P2024', 'P2034']) expect({ code, u: isDbUnreachable({ code }), t: isTransientDbError({ code }) }).toEqual({ code, u: true, t: true });
  expect(isDbUnreachable(new Error('timeout exceeded when trying to connect'))).toBe(true);
  const adapter = (cause: unknown) => ({ code: 'P2010', meta: { driverAdapterError: { name: 'DriverAdapterError', cause } } });
  expect(isDbUnreachable(adapter({ kind: 'DatabaseNotReachable' }))).toBe(true);
  expect(isDbUnreachable(adapter({ kind: 'postgres', code: '53300' }))).toBe(true);
  // Lost mid-statement: transient (a worker may retry its own transaction), but a COMMIT may have landed.
  for (const err of [{ code: '08006' }, { code: '57P01' }, { code: 'ECONNRESET' }, { code: 'P1017' }, new Error('Connection terminated unexpectedly'), adapter({ kind: 'ConnectionClosed' })]) {
    expect({ err, u: isDbUnreachable(err), t: isTransientDbError(err) }).toEqual({ err, u: false, t: true });
  }
  for (const code of ['23505', 'P0001', 'P2002']) expect(isDbUnreachable({ code })).toBe(false);
});
