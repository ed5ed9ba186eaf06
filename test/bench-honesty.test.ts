// The bench's pure pieces that keep its figures honest: per-phase counting at the receiver,
// phase validity, ratios in comparable units, targets never judged from an invalid phase,
// where a peak RSS comes from, the backlog sampler's back-off and the pools it samples.
import { nextInterval } from '../bench/lib/backlog-sampler';
import { eventBody, type GatedResult, type LoadResult } from '../bench/lib/load';
import { phaseValidity, type PhaseResult } from '../bench/lib/phases';
import { windowPeak, type ProcSummary } from '../bench/lib/proc-sampler';
import { poolsOf } from '../bench/lib/queue-sampler';
import { phaseTagOf, PhaseTally } from '../bench/lib/receiver-tally';
import { computeRatios, computeTargets, e2eEventsPerS, emptySystem, peakSourceOf, type SystemResults } from '../bench/lib/report';

const load = (o: Partial<LoadResult> = {}): LoadResult => ({
  mode: 'saturation',
  durationS: 10,
  offeredPerS: null,
  sent: 1000,
  ok2xx: 1000,
  non2xx: 0,
  errors: 0,
  skipped: 0,
  ok2xxPerS: 100,
  ackLatencyMs: { count: 1000, p50: 1, p90: 2, p99: 3, max: 4, mean: 1 },
  generatorCpuMs: 0,
  ...o,
});

const phase = <L extends LoadResult>(l: L, o: Partial<PhaseResult<L>> = {}): PhaseResult<L> => ({ tag: 't', fanout: 1, load: l, processes: {}, valid: true, invalidReasons: [], ...o });
const gated = (deliveredPerS: number): GatedResult => ({ ...load(), delivered: deliveredPerS * 10, deliveredPerS, windowS: 48, warmupS: 10, maxLag: 20_000 });
const proc = (peakRssMb: number, peakRssFrom: ProcSummary['peakRssFrom'] = 'vmhwm'): ProcSummary => ({ peakRssMb, lastRssMb: peakRssMb, peakCpuPct: 50, meanCpuPct: 20, samples: 10, peakRssFrom });

describe('per-phase counting at the receiver', () => {
  test('the phase tag leads every event body, and the body keeps its size', () => {
    const body = eventBody(1024, 'hookline.3.latency-1000-f1');
    expect(body.startsWith('{"bench_phase":"hookline.3.latency-1000-f1",')).toBe(true);
    expect(body.length).toBe(1024);
    expect(phaseTagOf(body.slice(0, 256))).toBe('hookline.3.latency-1000-f1');
    expect(phaseTagOf(eventBody(1024))).toBeNull();
    // Re-serialised with its keys in another order (a system that parses and re-encodes): still found.
    expect(phaseTagOf(JSON.stringify({ type: 'x', bench_phase: 'p.1' }))).toBe('p.1');
  });

  test('each phase counts its own deliveries; a duplicate key is not a delivery; untagged requests count nowhere', () => {
    const t = new PhaseTally();
    expect(t.record('a', 'k1')).toBe(true);
    expect(t.record('a', 'k2')).toBe(true);
    expect(t.record('a', 'k1')).toBe(false); // duplicate
    expect(t.record('b', 'k1')).toBe(true); // same key, another phase: its own count
    expect(t.record(null, 'k9')).toBe(false);
    expect(t.record('a', undefined)).toBe(true);
    expect(t.counts('a')).toEqual({ received: 4, unique: 3, duplicates: 1, noKey: 1, dedupStopped: false });
    expect(t.counts('b')).toEqual({ received: 1, unique: 1, duplicates: 0, noKey: 0, dedupStopped: false });
    expect(t.counts('never')).toEqual({ received: 0, unique: 0, duplicates: 0, noKey: 0, dedupStopped: false });
    expect(t.untagged).toBe(1);
  });

  test('stragglers of a finished phase still count in that phase, never in the next', () => {
    const t = new PhaseTally();
    t.record('a', 'k1');
    t.forget('a');
    t.record('b', 'k2');
    t.record('a', 'k3'); // late
    expect(t.counts('a')).toEqual(expect.objectContaining({ received: 2, unique: 2, dedupStopped: true }));
    expect(t.counts('b').received).toBe(1);
  });

  test('past the key cap, duplicates are no longer told apart (and it says so)', () => {
    const t = new PhaseTally(2);
    t.record('a', 'k1');
    t.record('a', 'k2');
    t.record('a', 'k3');
    t.record('a', 'k1');
    expect(t.counts('a')).toEqual(expect.objectContaining({ received: 4, unique: 4, dedupStopped: true }));
  });
});

describe('phase validity', () => {
  const drained = { drained: true, ms: 10, expected: 2000, received: 2000 };
  test('a clean phase is valid', () => {
    expect(phaseValidity({ load: load(), fanout: 2, drain: drained, counted: 2000, previous: { tag: 'p', label: 'p', drained: true } })).toEqual({ valid: true, invalidReasons: [] });
    // The bare server delivers nothing: no drain, nothing counted.
    expect(phaseValidity({ load: load(), fanout: null, previous: { tag: 'p', label: 'p', drained: null } }).valid).toBe(true);
  });

  test('invalid when the phase before did not drain, or its stragglers arrived during this one', () => {
    const v = phaseValidity({ load: load(), fanout: 1, drain: { ...drained, expected: 1000, received: 1000 }, counted: 1000, previous: { tag: 'p', label: 'e2e f1', drained: false }, leftovers: { 'ingest f1': 12 } });
    expect(v.valid).toBe(false);
    expect(v.invalidReasons).toEqual([expect.stringContaining('"e2e f1") did not drain'), '12 deliveries of "ingest f1" arrived during this phase']);
  });

  test('invalid when its own drain gave up, requests were skipped, refused or failed, or a process crashed', () => {
    const reasons = (o: Parameters<typeof phaseValidity>[0]): string[] => phaseValidity(o).invalidReasons;
    expect(reasons({ load: load(), fanout: 2, drain: { drained: false, ms: 15_000, expected: 2000, received: 1990 }, counted: 1990 })).toEqual(['the drain gave up: 1990 of 2000 deliveries arrived']);
    expect(reasons({ load: load({ skipped: 5 }), fanout: null })).toEqual([expect.stringContaining('5 requests not sent')]);
    expect(reasons({ load: load({ ok2xx: 990, non2xx: 10 }), fanout: null })).toEqual(['10 requests answered non-2xx']);
    expect(reasons({ load: load({ ok2xx: 999, errors: 1 }), fanout: null })).toEqual([expect.stringContaining('1 requests failed')]);
    expect(reasons({ load: load({ ok2xx: 0 }), fanout: null })).toEqual(['no request was acknowledged']);
    expect(reasons({ load: load(), fanout: null, crashes: 1 })).toEqual([expect.stringContaining('exited on their own')]);
    expect(reasons({ load: load(), fanout: 1, missingTimestamp: 3 })).toEqual([expect.stringContaining('3 deliveries carried no')]);
  });

  test('more distinct deliveries than requests sent and not refused × fan-out: invalid; requests left in flight at the deadline are allowed for', () => {
    // A closed loop stopped at its deadline: 16 requests sent, never answered, but accepted.
    expect(phaseValidity({ load: load({ sent: 1016, ok2xx: 1000 }), fanout: 2, drain: drained, counted: 2032 }).valid).toBe(true);
    expect(phaseValidity({ load: load({ sent: 1016, ok2xx: 1000 }), fanout: 2, drain: drained, counted: 2033 }).invalidReasons).toEqual([expect.stringContaining('2033 distinct deliveries counted, more than 1016 requests not refused × 2')]);
  });
});

describe('ratios and targets', () => {
  const system = (o: Partial<SystemResults>): SystemResults => ({ ...emptySystem(), ...o });

  test('end to end is compared with the bare server in events/s (deliveries ÷ fan-out), not deliveries', () => {
    const r = {
      hookline: system({ e2e: { f1: phase(gated(6000)), f5: phase(gated(10_000), { fanout: 5 }) } }),
      baselines: { bare: system({ ingest: phase(load({ ok2xxPerS: 20_000 })) }), afternoon: system({ e2e: { f5: phase(gated(5000), { fanout: 5 }) } }) },
    };
    const { ratios, caveats } = computeRatios(r);
    expect(ratios['e2e_f5_events_vs_bare_http']).toBe(0.1); // 10,000 / 5 = 2,000 events/s of 20,000
    expect(ratios['e2e_f1_events_vs_bare_http']).toBe(0.3);
    expect(ratios['e2e_f5_vs_afternoon']).toBe(2); // same fan-out: deliveries compare
    expect(ratios).not.toHaveProperty('e2e_f5_vs_bare_http');
    expect(caveats).toEqual({});
    expect(e2eEventsPerS('f5', phase(gated(10_000), { fanout: 5 }))).toBe(2000);
  });

  test('a ratio from an invalid phase carries its caveat', () => {
    const bad = phase(load({ ok2xxPerS: 500 }), { valid: false, invalidReasons: ['the drain gave up: 1 of 2 deliveries arrived'] });
    const { ratios, caveats } = computeRatios({ hookline: system({ ingest: bad }), baselines: { bare: system({ ingest: phase(load({ ok2xxPerS: 1000 })) }), afternoon: system({}) } });
    expect(ratios['ingest_vs_bare_http']).toBe(0.5);
    expect(caveats['ingest_vs_bare_http']).toContain('hookline ingest invalid (the drain gave up');
    expect(caveats).not.toHaveProperty('ingest_vs_afternoon'); // no figure, no caveat
  });

  test('peaks read differently are flagged on the RSS ratio', () => {
    const { caveats } = computeRatios({
      hookline: system({ totalPeakRssMb: 500, processes: { ingest: proc(100), router: proc(400) } }),
      baselines: { bare: system({}), afternoon: system({ totalPeakRssMb: 250, processes: { 'afternoon-server': proc(250, 'sampled') } }) },
    });
    expect(caveats['rss_vs_afternoon']).toBe('peaks read differently: hookline vmhwm, afternoon sampled');
    expect(peakSourceOf({ a: proc(1), b: proc(1, 'sampled') })).toBe('mixed');
  });

  test('a target is never met from an invalid phase; the e2e target names its window', () => {
    const lat = phase(load({ mode: 'constant-rate' }), { deliveryLatencyMs: { count: 10, p50: 1, p90: 2, p99: 3, max: 4, mean: 1 }, valid: false, invalidReasons: ['7 requests not sent (too many in flight): the offered rate was not held'] });
    const t = computeTargets({ hookline: system({ ingest: phase(load({ ok2xxPerS: 12_000 })), e2e: { f1: phase(gated(11_000)) }, latency: { '1000': { f1: lat } }, totalPeakRssMb: 500, processes: { ingest: proc(500) } }) });
    expect(t.find((x) => x.name.startsWith('ingest'))).toEqual(expect.objectContaining({ pass: true }));
    expect(t.find((x) => x.name.startsWith('end-to-end'))).toEqual(expect.objectContaining({ name: 'end-to-end deliveries/s (f1, 48 s window after 10 s warm-up)', pass: true }));
    expect(t.find((x) => x.name.startsWith('p99'))).toEqual(expect.objectContaining({ value: 3, pass: null, invalidReasons: [expect.stringContaining('7 requests not sent')] }));
    expect(t.find((x) => x.name.includes('RSS'))).toEqual(expect.objectContaining({ pass: true }));
  });

  test('each target says what the durable floor reached on the same measurement, judged by the same rule', () => {
    const invalidLat = phase(load({ mode: 'constant-rate' }), { deliveryLatencyMs: { count: 10, p50: 1, p90: 2, p99: 3, max: 4, mean: 1 }, valid: false, invalidReasons: ['the drain gave up'] });
    const hookline = system({ ingest: phase(load({ ok2xxPerS: 3000 })), e2e: { f1: phase(gated(2000)) }, latency: { '1000': { f1: phase(load({ mode: 'constant-rate' }), { deliveryLatencyMs: { count: 10, p50: 20, p90: 60, p99: 120, max: 200, mean: 30 } }) } } });
    const floor = system({ ingest: phase(load({ ok2xxPerS: 12_000 })), e2e: { f1: phase(gated(6000)) }, latency: { '1000': { f1: invalidLat } }, totalPeakRssMb: 240 });
    const t = computeTargets({ hookline, baselines: { floor } });
    expect(t.find((x) => x.name.startsWith('ingest'))).toEqual(expect.objectContaining({ pass: false, floor: { value: 12_000, pass: true } }));
    expect(t.find((x) => x.name.startsWith('end-to-end'))).toEqual(expect.objectContaining({ pass: false, floor: { value: 6000, pass: false } }));
    expect(t.find((x) => x.name.startsWith('p99'))).toEqual(expect.objectContaining({ value: 120, pass: false, floor: { value: 3, pass: null } })); // the floor's phase was invalid
    // Without a floor in the report (older reports), no floor field at all.
    expect(computeTargets({ hookline }).every((x) => !('floor' in x))).toBe(true);
    const { ratios } = computeRatios({ hookline, baselines: { bare: system({}), afternoon: system({}), floor } });
    expect(ratios['ingest_vs_floor']).toBe(0.25);
    expect(ratios['e2e_f1_vs_floor']).toBe(0.33);
    expect(ratios['p99_at_1000_f1_vs_floor']).toBe(40);
  });

  test('a sampled peak RSS under the target is not a pass (it is a lower bound); over it is a miss', () => {
    const rss = (mb: number) => computeTargets({ hookline: system({ totalPeakRssMb: mb, processes: { ingest: proc(mb, 'sampled') } }) }).find((x) => x.name.includes('RSS'));
    expect(rss(500)).toEqual(expect.objectContaining({ pass: null, note: expect.stringContaining('lower bound') }));
    expect(rss(700)).toEqual(expect.objectContaining({ pass: false }));
  });
});

describe('peak RSS source, back-off, pools', () => {
  test('the high-water mark when its reset held, else the largest sample, and which one', () => {
    expect(windowPeak(120, 180.4, true, false)).toEqual({ peakRssMb: 180, peakRssFrom: 'vmhwm' });
    expect(windowPeak(120, 180, true, true)).toEqual({ peakRssMb: 180, peakRssFrom: 'vmhwm-sum' });
    expect(windowPeak(120, 900, false, false)).toEqual({ peakRssMb: 120, peakRssFrom: 'sampled' }); // mark since process start: not this window's
    expect(windowPeak(120, undefined, true, false)).toEqual({ peakRssMb: 120, peakRssFrom: 'sampled' });
  });

  test('a slow backlog count doubles the interval (at most 16 s); a quick one brings it back', () => {
    expect(nextInterval(2000, 2000, 20)).toBe(2000);
    expect(nextInterval(2000, 2000, 600)).toBe(4000);
    expect(nextInterval(2000, 16_000, 9000)).toBe(16_000);
    expect(nextInterval(2000, 8000, 50)).toBe(2000);
    expect(nextInterval(2000, 8000, 500)).toBe(8000);
  });

  test('pool queues to sample come from DEDICATED_POOLS and DELIVER_QUEUES', () => {
    expect(poolsOf({})).toEqual([]);
    expect(poolsOf({ DEDICATED_POOLS: 'ten_a=acme,ten_b=beta', DELIVER_QUEUES: 'deliver,deliver.acme,deliver.gamma' })).toEqual(['acme', 'beta', 'gamma']);
    expect(poolsOf({ DEDICATED_POOLS: 'not a pool list' })).toEqual([]);
  });
});
