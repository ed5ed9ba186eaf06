import { idFloor, idTime, incrementIdPart, newId } from './ids';

const FORMAT = /^evt_[0-9a-hjkmnp-tv-z]{26}$/;

test('ids made one after another in one process are unique and strictly increasing, even within a millisecond', () => {
  const ids = Array.from({ length: 5000 }, () => newId('evt'));
  for (const id of ids) expect(id).toMatch(FORMAT);
  // Thousands of ids take a few milliseconds: most share their millisecond with another.
  const times = new Set(ids.map((id) => id.slice(4, 14)));
  expect(times.size).toBeLessThan(ids.length / 10);
  for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
});

test('the time part is the creation time, in an order that sorts as the times do', () => {
  const before = Date.now();
  const id = newId('evt');
  const after = Date.now();
  expect(id.slice(4, 14) >= idTime(before)).toBe(true);
  expect(id.slice(4, 14) <= idTime(after + 1)).toBe(true);
  expect(idTime(1_700_000_000_000) < idTime(1_700_000_000_001)).toBe(true);
  expect(idTime(31) < idTime(32)).toBe(true);
});

test('an id made at a given time takes that time and does not disturb the sequence', () => {
  const last = newId('evt');
  const old = newId('evt', 1_600_000_000_000);
  expect(old.slice(4, 14)).toBe(idTime(1_600_000_000_000));
  expect(old < last).toBe(true);
  expect(newId('evt') > last).toBe(true);
});

test('the random part counts up in base 32 with carries', () => {
  expect(incrementIdPart('0000')).toBe('0001');
  expect(incrementIdPart('000z')).toBe('0010');
  expect(incrementIdPart('0hzz')).toBe('0j00');
  expect(incrementIdPart('zzzz')).toBeNull();
});

test('idFloor splits ids at a time: made at it or later sort at or above, made before sort below', () => {
  const t = 1_700_000_000_000;
  const floor = idFloor('evt', t);
  expect(floor).toBe(`evt_${idTime(t)}`);
  expect(newId('evt', t) >= floor).toBe(true);
  expect(newId('evt', t + 1) >= floor).toBe(true);
  expect(newId('evt', t - 1) < floor).toBe(true);
  // Before the epoch: below every id; past 48 bits: the last time.
  expect(idFloor('evt', -5)).toBe('evt_0000000000');
  expect(idFloor('evt', Date.UTC(9999, 11, 31))).toBe(`evt_${idTime(Date.UTC(9999, 11, 31))}`);
  expect(idFloor('evt', 2 ** 60)).toBe('evt_7zzzzzzzzz');
});
