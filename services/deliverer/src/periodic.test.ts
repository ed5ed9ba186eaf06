import { createLogger } from '@hookline/logger';
import { every } from './periodic';

const logger = createLogger('periodic-test', 'error');

test('a kick runs at once; a kick during a run runs once more after it; none run after stop', async () => {
  let runs = 0;
  let release: () => void = () => undefined;
  const janitor = every(3_600_000, 'janitor', logger, async () => {
    runs++;
    await new Promise<void>((r) => (release = r));
  });
  janitor.kick();
  expect(runs).toBe(1);
  // Two kicks during the run: one more run, not two, and not overlapping the first.
  janitor.kick();
  janitor.kick();
  expect(runs).toBe(1);
  release();
  await new Promise((r) => setImmediate(r));
  expect(runs).toBe(2);
  const stopped = janitor.stop();
  release();
  await stopped;
  janitor.kick();
  expect(runs).toBe(2);
});
