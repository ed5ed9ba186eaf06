// The bench's CPU per delivery: each process's mean CPU (% of one core) over the phase,
// divided by the deliveries per second, in µs; and their total.
import { cpuPerDelivery } from '../bench/lib/phases';

const proc = (meanCpuPct: number) => ({ peakRssMb: 100, lastRssMb: 100, peakCpuPct: meanCpuPct, meanCpuPct, samples: 10 });

test('µs of CPU per delivery by process, with the total', () => {
  // 70 % of a core at 2,000 deliveries/s is 350 µs each; 50 % is 250 µs.
  expect(cpuPerDelivery({ deliverer: proc(70), postgres: proc(50), receiver: proc(3) }, 2000)).toEqual({ deliverer: 350, postgres: 250, receiver: 15, total: 615 });
});

test('nothing delivered: no figures rather than infinities', () => {
  expect(cpuPerDelivery({ deliverer: proc(70) }, 0)).toEqual({});
});
