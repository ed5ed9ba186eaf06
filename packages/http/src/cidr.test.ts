import { cidrContains, ipInAny, normalizeIp, parseCidr, parseCidrList, parseIp } from './cidr';

const inRange = (ip: string, cidr: string): boolean => {
  const c = parseCidr(cidr);
  const b = parseIp(ip);
  if (!c || !b) throw new Error(`bad vector ${ip} ${cidr}`);
  return cidrContains(c, b);
};

describe('parseIp / normalizeIp', () => {
  test.each([
    ['127.0.0.1', '127.0.0.1'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['::1', '0:0:0:0:0:0:0:1'],
    ['::', '0:0:0:0:0:0:0:0'],
    ['2001:DB8::8:800:200C:417A', '2001:db8:0:0:8:800:200c:417a'],
    ['2001:db8:0:0:0:0:0:1', '2001:db8:0:0:0:0:0:1'],
    ['fe80::1%eth0', 'fe80:0:0:0:0:0:0:1'],
    ['[::1]', '0:0:0:0:0:0:0:1'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::ffff:7f00:1', '127.0.0.1'],
    ['0:0:0:0:0:ffff:10.1.2.3', '10.1.2.3'],
    ['1::', '1:0:0:0:0:0:0:0'],
    ['::1.2.3.4', '0:0:0:0:0:0:102:304'],
  ])('%s → %s', (input, expected) => {
    expect(normalizeIp(input)).toBe(expected);
  });

  test.each(['', 'localhost', '1.2.3', '1.2.3.4.5', '256.1.1.1', '01.2.3.4', '1.2.3.-1', ':::', '1::2::3', '1:2:3:4:5:6:7:8:9', '12345::1', 'g::1', '::ffff:1.2.3.999', '1:2:3:4:5:6:7::8:9'])('rejects %p', (input) => {
    expect(parseIp(input)).toBeNull();
  });
});

describe('parseCidr', () => {
  test.each(['10.0.0.0/8', '0.0.0.0/0', '127.0.0.1/32', '127.0.0.1', '::1/128', '::/0', '2001:db8::/32', '::ffff:10.0.0.0/104'])('accepts %s', (c) => {
    expect(parseCidr(c)).not.toBeNull();
  });
  test.each(['10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/8/8', 'abc/8', '10.0.0.0/-1', '10.0.0.0/x', '/8'])('rejects %s', (c) => {
    expect(parseCidr(c)).toBeNull();
  });
});

describe('cidrContains', () => {
  test.each([
    // loopback
    ['127.0.0.1', '127.0.0.1/32', true],
    ['127.0.0.2', '127.0.0.1/32', false],
    ['127.1.2.3', '127.0.0.0/8', true],
    ['::1', '::1/128', true],
    ['::1', '127.0.0.1/32', false],
    ['127.0.0.1', '::1/128', false],
    // IPv4
    ['10.255.255.255', '10.0.0.0/8', true],
    ['11.0.0.0', '10.0.0.0/8', false],
    ['192.168.1.77', '192.168.1.64/26', true],
    ['192.168.1.128', '192.168.1.64/26', false],
    ['172.16.0.1', '172.16.0.0/12', true],
    ['172.32.0.1', '172.16.0.0/12', false],
    ['8.8.8.8', '0.0.0.0/0', true],
    ['10.1.2.3', '10.1.2.99/24', true],
    // IPv6
    ['2001:db8:1234::1', '2001:db8::/32', true],
    ['2001:db9::1', '2001:db8::/32', false],
    ['fe80::abcd', 'fe80::/10', true],
    ['febf::1', 'fe80::/10', true],
    ['fec0::1', 'fe80::/10', false],
    ['2001:db8::1', '::/0', true],
    // v4-mapped IPv6 (what a dual-stack socket reports) against IPv4 ranges and back
    ['::ffff:127.0.0.1', '127.0.0.1/32', true],
    ['::ffff:10.9.8.7', '10.0.0.0/8', true],
    ['::ffff:11.0.0.1', '10.0.0.0/8', false],
    ['10.9.8.7', '::ffff:10.0.0.0/104', true],
    ['::ffff:127.0.0.1', '::1/128', false],
    // an IPv4 /0 covers IPv4 only
    ['2001:db8::1', '0.0.0.0/0', false],
  ])('%s in %s → %s', (ip, cidr, expected) => {
    expect(inRange(ip, cidr)).toBe(expected);
  });
});

describe('ipInAny / parseCidrList', () => {
  test('matches any range and refuses malformed addresses', () => {
    const { cidrs, invalid } = parseCidrList(['10.0.0.0/8', 'nonsense', '::1/128']);
    expect(invalid).toEqual(['nonsense']);
    expect(ipInAny('::1', cidrs)).toBe(true);
    expect(ipInAny('10.2.3.4', cidrs)).toBe(true);
    expect(ipInAny('192.0.2.1', cidrs)).toBe(false);
    expect(ipInAny('not-an-ip', cidrs)).toBe(false);
    expect(ipInAny('127.0.0.1', [])).toBe(false);
  });
});
