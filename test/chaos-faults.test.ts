// The chaos run's fault schedule (bench/chaos/faults.ts): the plan, and the check of the
// fault log against it: a planned fault that did not happen, or no fault at all, makes the
// run INCOMPLETE; an explicitly reduced schedule is complete, and says what ran.
import { checkFaultSchedule, DEFAULT_FAULTS, parseFaultSpec, planFaults, type FaultLog, type PlannedFault } from '../bench/chaos/faults';
import { parseChaosOptions } from '../bench/chaos/chaos-options';

const ran = (plan: PlannedFault[], over: (f: PlannedFault, i: number) => Partial<FaultLog> = () => ({})): FaultLog[] =>
  plan.map((f, i) => ({ kind: f.kind, plannedAtMs: f.atMs, startedAtMs: f.atMs + 3, at: 1_700_000_000_000 + f.atMs, recoveredAfterMs: 800, ok: true, detail: 'done', ...over(f, i) }));

test('the default plan: three kills each of router, deliverer and ingest, Redis and PostgreSQL once, in the send window', () => {
  const plan = planFaults(DEFAULT_FAULTS, 80_000);
  const counts: Record<string, number> = {};
  for (const f of plan) counts[f.kind] = (counts[f.kind] ?? 0) + 1;
  expect(counts).toEqual({ router: 3, deliverer: 3, ingest: 3, redis: 1, postgres: 1 });
  expect(plan[0]!.atMs).toBe(8000);
  expect(plan.at(-1)!.atMs).toBe(68_000);
  expect(plan.map((f) => f.atMs)).toEqual([...plan.map((f) => f.atMs)].sort((a, b) => a - b));
});

test('the spec parser refuses unknown kinds and counts that are not whole numbers', () => {
  expect([...parseFaultSpec('deliverer:1, router:2,redis')]).toEqual([['deliverer', 1], ['router', 2], ['redis', 1]]);
  expect(() => parseFaultSpec('network:1')).toThrow(/unknown fault "network"/);
  expect(() => parseFaultSpec('router:x')).toThrow(/whole COUNT/);
  expect(() => parseFaultSpec('router:1:2')).toThrow(/whole COUNT/);
  expect(() => parseChaosOptions(['--faults', 'routr:1'])).toThrow(/unknown fault/);
});

test('the options tell the default schedule from an explicit one', () => {
  expect(parseChaosOptions([])).toMatchObject({ faults: DEFAULT_FAULTS, faultsExplicit: false, maxAttempts: 5 });
  expect(parseChaosOptions(['--faults', 'deliverer:1'])).toMatchObject({ faults: 'deliverer:1', faultsExplicit: true });
  expect(parseChaosOptions(['--faults', ''])).toMatchObject({ faults: '', faultsExplicit: true });
});

test('every planned fault happened: complete, and the summary lists them', () => {
  const plan = planFaults(DEFAULT_FAULTS, 80_000);
  const c = checkFaultSchedule({ spec: DEFAULT_FAULTS, explicit: false }, plan, ran(plan));
  expect(c).toMatchObject({ complete: true, reduced: false, missing: [], problems: [], ranSummary: 'router×3, deliverer×3, ingest×3, redis×1, postgres×1' });
});

test('the PostgreSQL fault skipped (no private PostgreSQL could start): INCOMPLETE', () => {
  const plan = planFaults(DEFAULT_FAULTS, 80_000);
  const logs = ran(plan, (f) => (f.kind === 'postgres' ? { ok: false, detail: 'skipped (no private PostgreSQL could be started)' } : {}));
  const c = checkFaultSchedule({ spec: DEFAULT_FAULTS, explicit: false }, plan, logs);
  expect(c.complete).toBe(false);
  expect(c.ran).not.toHaveProperty('postgres');
  expect(c.missing).toEqual([{ kind: 'postgres', plannedAtMs: plan.find((f) => f.kind === 'postgres')!.atMs, why: 'skipped (no private PostgreSQL could be started)' }]);
  expect(c.ranSummary).toBe('router×3, deliverer×3, ingest×3, redis×1');
});

test('a fault with no log entry, or whose restart failed: INCOMPLETE', () => {
  const plan = planFaults('router:2,deliverer:1', 10_000);
  expect(checkFaultSchedule({ spec: 'router:2,deliverer:1', explicit: true }, plan, ran(plan).slice(1)).missing).toEqual([{ kind: plan[0]!.kind, plannedAtMs: plan[0]!.atMs, why: 'never started' }]);
  const failed = checkFaultSchedule({ spec: 'router:2,deliverer:1', explicit: true }, plan, ran(plan, (_f, i) => (i === 2 ? { ok: false, detail: 'restart failed 3 times' } : {})));
  expect(failed.complete).toBe(false);
  expect(failed.problems).toEqual([expect.stringMatching(/did not happen: restart failed 3 times/)]);
});

test('an empty schedule (--faults "") is never complete: a chaos run without faults proves nothing', () => {
  const c = checkFaultSchedule({ spec: '', explicit: true }, planFaults('', 10_000), []);
  expect(c).toMatchObject({ complete: false, ranSummary: 'none', reduced: true });
  expect(c.problems).toEqual([expect.stringMatching(/no fault was planned/)]);
});

test('an explicitly reduced schedule that ran in full is complete, marked reduced, and lists exactly what ran', () => {
  const spec = 'deliverer:1,router:1,ingest:1,redis:1';
  const plan = planFaults(spec, 3000);
  const c = checkFaultSchedule({ spec, explicit: true }, plan, ran(plan));
  expect(c).toMatchObject({ complete: true, reduced: true, explicit: true, requested: spec, ranSummary: 'router×1, deliverer×1, ingest×1, redis×1' });
});

test('a log entry no plan asked for is reported', () => {
  const plan = planFaults('deliverer:1', 3000);
  const logs = [...ran(plan), ...ran([{ kind: 'router', atMs: 999 }])];
  expect(checkFaultSchedule({ spec: 'deliverer:1', explicit: true }, plan, logs).problems).toEqual([expect.stringMatching(/unplanned router fault/)]);
});
