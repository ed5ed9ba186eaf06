import { createLogger } from '@hookline/logger';
import { pausingRateTokens, type RateAnswer } from './rate-tokens';

test('after a failure Redis is not asked for a token for the pause (fail open), then it is again', async () => {
  let clock = 10_000;
  const asked: string[] = [];
  let failing = true;
  const take = async (destinationId: string): Promise<RateAnswer> => {
    asked.push(destinationId);
    if (failing) throw new Error('Command timed out');
    return { allowed: 1, nextWindowAt: 11_000 };
  };
  const tokens = pausingRateTokens(take, createLogger('rate-tokens-test', 'error'), 2_000, () => clock);

  expect(await tokens.take('dst_a', 5, clock)).toBeNull();
  failing = false;
  clock += 1_999;
  // Within the pause: no call, whichever destination; the request goes.
  expect(await tokens.take('dst_b', 5, clock)).toBeNull();
  expect(asked).toEqual(['dst_a']);
  clock += 1;
  expect(await tokens.take('dst_b', 5, clock)).toEqual({ allowed: 1, nextWindowAt: 11_000 });
  expect(asked).toEqual(['dst_a', 'dst_b']);
});
