// Pure tests: no DNS, no traffic. Each row is an address string and the expected verdict.
import { classifyAddress } from './classify-address';
import { looksNumeric, parseHost, parseIPv4 } from './parse-host';
import { CHECKED_HOSTS_MAX, createSsrfGuard } from './ssrf-guard';

const refused: [string, string][] = [
  // IPv4 loopback in every notation inet_aton and the URL parser accept.
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['2130706433', 'loopback'],
  ['0177.0.0.1', 'loopback'],
  ['0x7f.1', 'loopback'],
  ['0x7f000001', 'loopback'],
  ['127.1', 'loopback'],
  ['127.0.1', 'loopback'],
  ['017700000001', 'loopback'],
  ['0x7F.0.0.1', 'loopback'],
  ['127.0.0.1.', 'loopback'],
  // private
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['012.1.2.3', 'private'],
  ['167772161', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['0xc0.0xa8.1.1', 'private'],
  ['3232235777', 'private'],
  // link-local, metadata, CGNAT
  ['169.254.1.1', 'link_local'],
  ['169.254.169.254', 'metadata'],
  ['0xa9.0xfe.0xa9.0xfe', 'metadata'],
  ['2852039166', 'metadata'],
  ['168.63.129.16', 'metadata'],
  ['100.100.100.200', 'metadata'],
  ['100.64.0.1', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  // this network, multicast, broadcast, reserved, documentation, benchmarking
  ['0.0.0.0', 'unspecified'],
  ['0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['255.255.255.255', 'broadcast'],
  ['240.0.0.1', 'reserved'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.10', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['198.51.100.7', 'reserved'],
  ['203.0.113.9', 'reserved'],
  // IPv6
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::', 'unspecified'],
  ['fe80::1', 'link_local'],
  ['fe80::1%eth0', 'link_local'],
  ['febf::1', 'link_local'],
  ['fc00::1', 'unique_local'],
  ['fd12:3456:789a::1', 'unique_local'],
  ['fd00:ec2::254', 'metadata'],
  ['ff02::1', 'multicast'],
  ['fec0::1', 'reserved'],
  ['2001:db8::1', 'reserved'],
  ['100::1', 'reserved'],
  ['2002:7f00:1::1', 'reserved'],
  ['3fff::1', 'reserved'],
  ['4000::1', 'reserved'],
  // IPv4 reached through IPv6 forms
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['[::ffff:127.0.0.1]', 'loopback'],
  ['0:0:0:0:0:ffff:7f00:0001', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:a9fe:a9fe', 'metadata'],
  ['::ffff:192.168.0.1', 'private'],
  ['::127.0.0.1', 'loopback'],
  ['64:ff9b::10.0.0.1', 'private'],
  ['64:ff9b::a9fe:a9fe', 'metadata'],
  ['::ffff:0.0.0.0', 'unspecified'],
  // not an address at all
  ['localhost', 'not_an_ip'],
  ['example.com', 'not_an_ip'],
  ['', 'not_an_ip'],
  ['256.1.1.1', 'not_an_ip'],
  ['1.2.3.4.5', 'not_an_ip'],
  ['08.1.2.3', 'not_an_ip'],
  ['4294967296', 'not_an_ip'],
];

const allowed: [string, string][] = [
  ['8.8.8.8', '8.8.8.8'],
  ['93.184.216.34', '93.184.216.34'],
  ['1.1.1.1', '1.1.1.1'],
  ['172.15.255.255', '172.15.255.255'],
  ['172.32.0.1', '172.32.0.1'],
  ['100.63.255.255', '100.63.255.255'],
  ['100.128.0.1', '100.128.0.1'],
  ['169.253.255.255', '169.253.255.255'],
  ['11.0.0.1', '11.0.0.1'],
  ['134744072', '8.8.8.8'],
  ['0x08.0x08.0x08.0x08', '8.8.8.8'],
  ['2606:4700:4700::1111', '2606:4700:4700::1111'],
  ['2a00:1450:4001:80b::200e', '2a00:1450:4001:80b::200e'],
  ['::ffff:8.8.8.8', '::ffff:808:808'],
  ['64:ff9b::8.8.8.8', '64:ff9b::808:808'],
];

test.each(refused)('%s is refused as %s', (ip, reason) => {
  expect(classifyAddress(ip)).toEqual({ allowed: false, reason });
});

test.each(allowed)('%s is allowed (as %s)', (ip, address) => {
  const v = classifyAddress(ip);
  expect(v).toMatchObject({ allowed: true, address });
});

test('inet_aton notations normalise to a dotted quad', () => {
  expect(parseIPv4('2130706433')).toBe('127.0.0.1');
  expect(parseIPv4('0177.0.0.1')).toBe('127.0.0.1');
  expect(parseIPv4('0x7f.1')).toBe('127.0.0.1');
  expect(parseIPv4('127.1')).toBe('127.0.0.1');
  expect(parseIPv4('10.1.65535')).toBe('10.1.255.255');
  expect(parseIPv4('10.1.65536')).toBeNull();
  expect(parseIPv4('0x100.0.0.1')).toBeNull();
  expect(parseIPv4('1.2.3.x')).toBeNull();
  expect(parseHost('[2001:DB8::1]')).toEqual({ family: 6, address: '2001:db8::1' });
  expect(parseHost('example.com')).toBeNull();
});

test('hosts that are almost numbers are flagged, real names are not', () => {
  for (const h of ['08.1.2.3', '1.2.3.4.5', '999999999999', '0x1.0x2.3.4.5']) expect(looksNumeric(h)).toBe(true);
  for (const h of ['example.com', 'api.1password.com', 'x1.y2', 'localhost']) expect(looksNumeric(h)).toBe(false);
});

describe('guard', () => {
  const fakeDns = (answers: Record<string, string[]>) => async (host: string) => (answers[host] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  const lookup = (guard: ReturnType<typeof createSsrfGuard>, host: string, all: boolean) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) => guard.lookup(host, { all }, (err, address) => resolve({ err, address })));

  test('checkHost refuses IP literals in odd notations and lets names through to the lookup', () => {
    const g = createSsrfGuard([]);
    for (const h of ['127.0.0.1', '2130706433', '0x7f.1', '[::1]', '[::ffff:169.254.169.254]', '10.1', '08.1.2.3']) expect(g.checkHost(h)?.code).toBe('ERR_SSRF_BLOCKED');
    expect(g.checkHost('8.8.8.8')).toBeNull();
    expect(g.checkHost('hooks.example.com')).toBeNull();
  });

  test('the allowlist exempts its ranges only', () => {
    const g = createSsrfGuard(['127.0.0.0/8', '::1/128']);
    expect(g.checkHost('127.0.0.1')).toBeNull();
    expect(g.checkHost('[::1]')).toBeNull();
    expect(g.checkHost('[::ffff:127.0.0.1]')).toBeNull();
    expect(g.checkHost('10.0.0.1')?.reason).toBe('private');
    expect(() => createSsrfGuard(['10.0.0.0/33'])).toThrow(/SSRF_ALLOWLIST/);
    expect(() => createSsrfGuard(['nonsense'])).toThrow(/SSRF_ALLOWLIST/);
  });

  test('checkHost answers are kept per host, and stay right past the memo\'s bound', () => {
    const g = createSsrfGuard(['127.0.0.0/8']);
    const first = g.checkHost('10.0.0.1');
    expect(first?.reason).toBe('private');
    expect(g.checkHost('10.0.0.1')).toBe(first); // the same answer object: not worked out again
    // More distinct hosts than the memo keeps: each answer is still the verdict for its own host.
    for (let i = 0; i < CHECKED_HOSTS_MAX + 10; i++) {
      const a = (i >> 8) & 255, b = i & 255;
      expect(g.checkHost(`127.${a}.${b}.1`)).toBeNull();
      expect(g.checkHost(`10.${a}.${b}.1`)?.reason).toBe('private');
      expect(g.checkHost(`${i}.example.com`)).toBeNull();
    }
    expect(g.checkHost('10.0.0.1')?.reason).toBe('private');
    expect(g.checkHost('0x7f.1')).toBeNull();
  });

  test('a name is refused when any address it resolves to is refused (rebinding-style answers)', async () => {
    const g = createSsrfGuard([], fakeDns({ 'mixed.test': ['93.184.216.34', '10.0.0.7'], 'meta.test': ['169.254.169.254'], 'ok.test': ['93.184.216.34', '2606:4700::1'] }));
    expect((await lookup(g, 'mixed.test', true)).err?.code).toBe('ERR_SSRF_BLOCKED');
    expect((await lookup(g, 'meta.test', false)).err?.code).toBe('ERR_SSRF_BLOCKED');
    expect((await lookup(g, 'nowhere.test', false)).err?.code).toBe('ENOTFOUND');
    const ok = await lookup(g, 'ok.test', true);
    expect(ok.err).toBeNull();
    expect(ok.address).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1', family: 6 },
    ]);
    expect((await lookup(g, 'ok.test', false)).address).toBe('93.184.216.34');
  });

  test('the system resolver path refuses localhost (from /etc/hosts, no traffic)', async () => {
    const g = createSsrfGuard([]);
    expect((await lookup(g, 'localhost', true)).err?.code).toBe('ERR_SSRF_BLOCKED');
  });
});
