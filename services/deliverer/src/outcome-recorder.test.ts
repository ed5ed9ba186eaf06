import type { Outcome } from '@hookline/delivery';
import { createOutcomeRecorder } from './outcome-recorder';

const outcome = (id: string): Outcome => ({ deliveryId: id } as Outcome);
const ids = (batches: Outcome[][]): string[][] => batches.map((b) => b.map((o) => o.deliveryId));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('outcomes completed together are one write; a late one is written on its own, without waiting for finish', async () => {
  const written: Outcome[][] = [];
  const rec = createOutcomeRecorder<Outcome>(async (o) => void written.push(o), 20);
  rec.add(outcome('a'));
  rec.add(outcome('b'));
  expect(written).toHaveLength(0); // lingering
  await sleep(60);
  expect(ids(written)).toEqual([['a', 'b']]); // written before the batch finished
  rec.add(outcome('c'));
  await rec.finish();
  expect(ids(written)).toEqual([['a', 'b'], ['c']]);
});

test('finish writes what is pending at once and rejects when any write failed', async () => {
  const written: Outcome[][] = [];
  const rec = createOutcomeRecorder<Outcome>(async (o) => {
    if (o[0]!.deliveryId === 'x') throw new Error('db down');
    written.push(o);
  }, 10_000);
  rec.add(outcome('x'));
  await sleep(1);
  const first = createOutcomeRecorder<Outcome>(async (o) => void written.push(o), 10_000);
  first.add(outcome('y'));
  await first.finish(); // no 10 s linger
  expect(ids(written)).toEqual([['y']]);
  await expect(rec.finish()).rejects.toThrow('db down');
});
