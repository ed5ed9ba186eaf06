// Keeps bench/deliver-job-cost.ts from rotting: a tiny run (jobs of 1 and 5, 10 deliveries
// per size) must exit 0 and print one row per round and size, each delivering the job whole
// (the script fails when a job delivers less). It checks the shape, never the speed.
import { runHarness } from '../bench/lib/run-harness';

jest.setTimeout(90_000);

test('a tiny deliver-job-cost run prints CPU per delivery and per job for each round and size', async () => {
  const { code, output } = await runHarness('bench/deliver-job-cost.ts', ['1,5', '10'], 80_000);
  expect({ code, tail: code === 0 ? '' : output.slice(-3000) }).toEqual({ code: 0, tail: '' });
  const rows = output
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length === 6 && f.every((x) => /^\d+(\.\d+)?$/.test(x)));
  expect(rows.map((f) => [f[0], f[1], f[2]])).toEqual([['1', '1', '10'], ['1', '5', '2'], ['2', '1', '10'], ['2', '5', '2']]);
  for (const f of rows) expect(Number(f[3])).toBeGreaterThan(0);
});
