import { correlationId } from './trace';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

describe('correlationId', () => {
  it("carries a valid traceparent's trace id through", () => {
    expect(correlationId(`00-${TRACE}-00f067aa0ba902b7-01`)).toBe(TRACE);
    expect(correlationId([`00-${TRACE}-00f067aa0ba902b7-00`, 'ignored'])).toBe(TRACE);
  });

  it.each([
    ['upper-case hex (W3C: ignore it)', `00-${TRACE.toUpperCase()}-00F067AA0BA902B7-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-00f067aa0ba902b7-01`],
    ['trailing data on version 00', `00-${TRACE}-00f067aa0ba902b7-01-extra`],
    ['garbage', 'not a traceparent'],
  ])('starts a fresh trace for %s', (_what, header) => {
    const id = correlationId(header);
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(id).not.toBe(TRACE);
  });

  it('starts a fresh trace when there is no header', () => {
    expect(correlationId(undefined)).toMatch(/^[0-9a-f]{32}$/);
  });
});
