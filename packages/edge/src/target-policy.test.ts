// The agent's target policy as a pure function: which addresses (and host names) it may
// connect to. No DNS, no traffic.
import { parseTargetPolicy, refusalOf } from './target-policy';

const policy = (allowed = '', denyLinkLocal = true) => {
  const { policy: p, invalid } = parseTargetPolicy(allowed, denyLinkLocal);
  expect(invalid).toEqual([]);
  return p;
};

describe('by default (no EDGE_ALLOWED_TARGETS, EDGE_DENY_LINK_LOCAL=true)', () => {
  test.each([
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.0.1', 'IPv4 link-local'],
    ['169.254.170.2', 'ECS task metadata'],
    ['fe80::1', 'IPv6 link-local'],
    ['FE80::a:b', 'IPv6 link-local, upper case'],
    ['febf:ffff::1', 'the top of fe80::/10'],
    ['fe80::1%eth0', 'IPv6 link-local with a zone'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata in hex'],
    ['[::ffff:169.254.169.254]', 'IPv4-mapped metadata as a URL host'],
    ['::169.254.169.254', 'IPv4-compatible metadata'],
    ['64:ff9b::169.254.169.254', 'NAT64 metadata'],
    ['fd00:ec2::254', 'AWS metadata over IPv6'],
    ['168.63.129.16', 'Azure wireserver'],
    ['100.100.100.200', 'Alibaba Cloud metadata'],
  ])('refuses %s (%s)', (address) => {
    expect(refusalOf(policy(), 'metadata.internal', address)).toBe('link_local');
  });

  test.each([
    ['127.0.0.1'],
    ['::1'],
    ['::ffff:127.0.0.1'],
    ['10.0.3.7'],
    ['172.16.0.1'],
    ['192.168.1.10'],
    ['fd12:3456::1'],
    ['100.64.0.1'],
    ['169.253.255.255'],
    ['169.255.0.0'],
    ['fec0::1'],
    ['8.8.8.8'],
  ])('allows %s (loopback, private and the rest stay reachable)', (address) => {
    expect(refusalOf(policy(), 'service.internal', address)).toBeNull();
  });

  test('a value that is not an address is refused', () => {
    expect(refusalOf(policy(), 'x', 'not-an-ip')).toBe('not_allowed');
  });
});

test('EDGE_DENY_LINK_LOCAL=false allows link-local and metadata addresses', () => {
  const p = policy('', false);
  for (const a of ['169.254.169.254', 'fe80::1', '::ffff:169.254.169.254', 'fd00:ec2::254']) expect(refusalOf(p, 'h', a)).toBeNull();
});

describe('EDGE_ALLOWED_TARGETS', () => {
  const p = policy(' 10.0.0.0/8, 192.168.1.10 ,fd00:1::/32, Hooks.Internal. ,svc_a.corp');

  test.each([
    ['10.1.2.3', 'other.internal'],
    ['10.255.255.255', 'x'],
    ['::ffff:10.1.2.3', 'x'],
    ['192.168.1.10', 'x'],
    ['fd00:1:2::3', 'x'],
    ['127.0.0.1', 'hooks.internal'],
    ['127.0.0.1', 'HOOKS.INTERNAL.'],
    ['127.0.0.1', 'svc_a.corp'],
  ])('allows %s for host %s (a listed range, or a listed host name)', (address, host) => {
    expect(refusalOf(p, host, address)).toBeNull();
  });

  test.each([
    ['127.0.0.1', '127.0.0.1'],
    ['127.0.0.1', 'localhost'],
    ['::1', 'localhost'],
    ['192.168.1.11', 'x'],
    ['11.0.0.1', 'x'],
    ['fd00:2::1', 'x'],
    ['127.0.0.1', 'evil.hooks.internal'],
    ['127.0.0.1', 'hooks.internal.evil'],
    ['0.0.0.0', '0.0.0.0'],
  ])('refuses %s for host %s (neither listed)', (address, host) => {
    expect(refusalOf(p, host, address)).toBe('not_allowed');
  });

  test('a listed host name does not lift the link-local refusal, and a broad range does not either', () => {
    expect(refusalOf(p, 'hooks.internal', '169.254.169.254')).toBe('link_local');
    const broad = policy('0.0.0.0/0,::/0');
    expect(refusalOf(broad, 'x', '169.254.169.254')).toBe('link_local');
    expect(refusalOf(broad, 'x', '::ffff:169.254.169.254')).toBe('link_local');
    expect(refusalOf(broad, 'x', 'fe80::1')).toBe('link_local');
    expect(refusalOf(broad, 'x', '10.1.2.3')).toBeNull();
  });

  test('a link-local range or address listed explicitly is allowed, and only what it covers', () => {
    const p1 = policy('169.254.169.254');
    expect(refusalOf(p1, 'x', '169.254.169.254')).toBeNull();
    expect(refusalOf(p1, 'x', '::ffff:169.254.169.254')).toBeNull();
    expect(refusalOf(p1, 'x', '169.254.169.253')).toBe('link_local');
    const p2 = policy('169.254.0.0/16,fe80::/10');
    expect(refusalOf(p2, 'x', '169.254.1.2')).toBeNull();
    expect(refusalOf(p2, 'x', 'fe80::1')).toBeNull();
    expect(refusalOf(p2, 'x', '10.0.0.1')).toBe('not_allowed');
  });

  test.each([['10.0.0.0/33'], ['10.0.0.0/8/1'], ['10.1'], ['1.2.3.4.5'], ['http://hooks.internal'], ['hooks.internal:8080'], ['*.internal'], ['a b'], ['-x.internal'], ['999.1.1.1']])(
    'the entry %s is neither a CIDR nor a host name',
    (entry) => {
      expect(parseTargetPolicy(`10.0.0.0/8,${entry}`, true).invalid).toEqual([entry]);
    },
  );

  test('unset or empty, nothing is restricted', () => {
    expect(policy('').restricted).toBe(false);
    expect(policy('  ').restricted).toBe(false);
    expect(policy('10.0.0.0/8').restricted).toBe(true);
  });
});
