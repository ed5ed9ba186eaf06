import { boundedMemo } from './bounded-memo';

test('computes once per key, keeps null answers, starts over past its bound, and keeps nothing from a throw', () => {
  const calls: string[] = [];
  const f = boundedMemo(3, (k: string) => {
    calls.push(k);
    if (k === 'bad') throw new Error('no');
    return k === 'none' ? null : k.toUpperCase();
  });
  expect([f('a'), f('a'), f('none'), f('none')]).toEqual(['A', 'A', null, null]);
  expect(calls).toEqual(['a', 'none']);
  expect(() => f('bad')).toThrow('no');
  expect(() => f('bad')).toThrow('no');
  expect(calls).toEqual(['a', 'none', 'bad', 'bad']);
  f('b'); // third key: the memo is full
  f('c'); // past the bound: the memo starts over with c
  f('a');
  expect(calls.slice(4)).toEqual(['b', 'c', 'a']);
});
