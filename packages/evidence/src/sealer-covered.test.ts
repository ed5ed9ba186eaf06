import { coveredIds } from './sealer';

test('keeps the newest pages of attempt ids, at most the given number of ids', () => {
  const seen = coveredIds(5);
  seen.add(['a', 'b']);
  seen.add(['c', 'd']);
  expect([...seen.set()]).toEqual(['a', 'b', 'c', 'd']);
  seen.add(['e', 'f']);
  expect([...seen.set()]).toEqual(['c', 'd', 'e', 'f']);
  seen.add(['g', 'h', 'i', 'j', 'k', 'l']);
  expect([...seen.set()]).toEqual([]);
});
