import { parseCidrList } from '@hookline/http';
import { resolveClientIp } from './client-ip';

const trusted = parseCidrList(['127.0.0.1/32', '10.0.0.0/8']).cidrs;

describe('resolveClientIp', () => {
  test('without trusted proxies the socket peer is the client, whatever the header says', () => {
    expect(resolveClientIp('127.0.0.1', '203.0.113.9', [])).toBe('127.0.0.1');
  });
  test('a peer outside the trusted list is not believed', () => {
    expect(resolveClientIp('192.0.2.1', '203.0.113.9', trusted)).toBe('192.0.2.1');
  });
  test('a trusted peer: the right-most untrusted hop is the client', () => {
    expect(resolveClientIp('127.0.0.1', '198.51.100.1, 203.0.113.9, 10.0.0.5', trusted)).toBe('203.0.113.9');
  });
  test('v4-mapped peers and hops are normalised', () => {
    expect(resolveClientIp('::ffff:127.0.0.1', ' ::ffff:203.0.113.9 ', trusted)).toBe('203.0.113.9');
  });
  test('repeated header lines are one chain', () => {
    expect(resolveClientIp('127.0.0.1', ['198.51.100.1', '10.1.1.1'], trusted)).toBe('198.51.100.1');
  });
  test('all hops trusted: the left-most is used', () => {
    expect(resolveClientIp('127.0.0.1', '10.0.0.9, 10.0.0.5', trusted)).toBe('10.0.0.9');
  });
  test('an unreadable hop ends the chain at the last trusted address', () => {
    expect(resolveClientIp('127.0.0.1', '203.0.113.9, garbage, 10.0.0.5', trusted)).toBe('10.0.0.5');
  });
  test('no header, or no peer', () => {
    expect(resolveClientIp('127.0.0.1', undefined, trusted)).toBe('127.0.0.1');
    expect(resolveClientIp(undefined, '203.0.113.9', trusted)).toBeNull();
  });
});
