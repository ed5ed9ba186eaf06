import { encodeCursor, pageResult, readPage, readTimeRange } from './pagination';

const id = (n: number) => `dlv_${String(n).padStart(26, '0')}`;

describe('readPage', () => {
  it('defaults to 20 in cursor mode and decodes cursors it issued', () => {
    expect(readPage({})).toEqual({ limit: 20, mode: 'cursor', beforeId: null });
    expect(readPage({ limit: '5', cursor: encodeCursor(id(7)) })).toEqual({ limit: 5, mode: 'cursor', beforeId: id(7) });
    expect(readPage({ limit: '100', offset: '40' })).toEqual({ limit: 100, mode: 'offset', offset: 40 });
  });

  it('refuses out-of-range and foreign values, naming the parameter', () => {
    const fields = (q: Record<string, unknown>) => {
      try {
        readPage(q);
        return [];
      } catch (err) {
        return (err as { extras: { errors: { field: string }[] } }).extras.errors.map((e) => e.field);
      }
    };
    expect(fields({ limit: '101' })).toEqual(['limit']);
    expect(fields({ limit: '0' })).toEqual(['limit']);
    expect(fields({ limit: 'ten' })).toEqual(['limit']);
    expect(fields({ cursor: Buffer.from("1' OR 1=1").toString('base64url') })).toEqual(['cursor']);
    expect(fields({ cursor: encodeCursor(id(1)), offset: '3' })).toEqual(['offset']);
    expect(fields({ offset: '2147483648' })).toEqual(['offset']);
    expect(fields({ offset: '2147483647' })).toEqual([]);
  });

  it('takes only a cursor of its own list when told its kind of id', () => {
    expect(readPage({ cursor: encodeCursor(id(7)) }, 'dlv')).toEqual({ limit: 20, mode: 'cursor', beforeId: id(7) });
    const refused = (kind: 'evt' | 'att', cursor: string) => {
      try {
        readPage({ cursor }, kind);
        return null;
      } catch (err) {
        return (err as { extras: { errors: { field: string; message: string }[] } }).extras.errors;
      }
    };
    expect(refused('evt', encodeCursor(id(7)))).toEqual([{ field: 'cursor', message: 'is not a cursor of this list' }]);
    expect(refused('att', encodeCursor(id(7)))).toEqual([{ field: 'cursor', message: 'is not a cursor of this list' }]);
    // Not an id at all stays the generic refusal.
    expect(refused('evt', 'zzz')).toEqual([{ field: 'cursor', message: 'is not a cursor this API issued' }]);
  });
});

describe('pageResult', () => {
  it('cuts the look-ahead row and points the cursor at the last row shown', () => {
    const rows = [5, 4, 3].map((n) => ({ id: id(n) }));
    expect(pageResult(rows, { limit: 2, mode: 'cursor', beforeId: null })).toEqual({ items: rows.slice(0, 2), next_cursor: encodeCursor(id(4)) });
    expect(pageResult(rows.slice(0, 2), { limit: 2, mode: 'cursor', beforeId: null }).next_cursor).toBeNull();
    expect(pageResult(rows, { limit: 2, mode: 'offset', offset: 4 })).toEqual({ items: rows.slice(0, 2), next_cursor: null, next_offset: 6 });
  });
});

describe('readTimeRange', () => {
  it('reads ISO 8601 bounds and refuses anything else', () => {
    expect(readTimeRange({ since: '2026-01-01T00:00:00Z' })).toEqual({ gte: new Date('2026-01-01T00:00:00Z') });
    expect(readTimeRange({})).toBeUndefined();
    expect(() => readTimeRange({ until: '1700000000' })).toThrow();
    expect(() => readTimeRange({ since: '0000-01-01T00:00:00Z' })).toThrow();
  });

  it('refuses until before since, naming until; equal bounds are an empty window', () => {
    const errors = (q: Record<string, unknown>) => {
      try {
        readTimeRange(q);
        return null;
      } catch (err) {
        return (err as { extras: { errors: { field: string; message: string }[] } }).extras.errors;
      }
    };
    expect(errors({ since: '2024-01-02', until: '2024-01-01T23:59:59.999Z' })).toEqual([{ field: 'until', message: 'must not be before since' }]);
    expect(errors({ since: '2024-01-01', until: '2024-01-01T00:00:00Z' })).toBeNull();
    // A malformed bound is reported alone (no comparison with it).
    expect(errors({ since: '2024-01-02', until: 'yesterday' })).toEqual([{ field: 'until', message: expect.stringContaining('ISO 8601') }]);
  });

  it('takes ISO 8601 date-times with an offset (±hh:mm or ±hhmm) or plain dates (midnight UTC), and refuses impossible dates rather than rolling them over', () => {
    expect(readTimeRange({ since: '2024-01-01T01:00:00+01:00', until: '2023-12-31T19:00:00.5-05:00' })).toEqual({ gte: new Date('2024-01-01T00:00:00Z'), lt: new Date('2024-01-01T00:00:00.500Z') });
    expect(readTimeRange({ since: '0001-01-01T00:00:00Z' })).toEqual({ gte: new Date('0001-01-01T00:00:00Z') });
    expect(readTimeRange({ since: '2024-01-01', until: '2024-01-01T05:30:00+0530' })).toEqual({ gte: new Date('2024-01-01T00:00:00Z'), lt: new Date('2024-01-01T00:00:00Z') });
    for (const v of ['2024-02-30T00:00:00Z', '2023-02-29T00:00:00Z', '2024-02-30', '2024-1-1', '2024-01-01 (x)', '2024-01-01T00:00:00', '2024-01-01T00:00:00+01', '2024-01-01T00:00:60Z', '2024-01-01T00:00:00+01:60', '0001-01-01T00:00:00+01:00']) {
      expect({ v, thrown: (() => { try { readTimeRange({ since: v }); return false; } catch { return true; } })() }).toEqual({ v, thrown: true });
    }
  });
});
