// The guard's lookup and URL check, with a stub resolver: no DNS, no socket.
import type { LookupAddress } from 'node:dns';
import { createTargetGuard, TargetRefusedError, type Resolver } from './target-guard';
import { parseTargetPolicy } from './target-policy';

const guardOf = (allowed: string, answers: Record<string, string[]>, denyLinkLocal = true) => {
  const refused: TargetRefusedError[] = [];
  const resolver: Resolver = async (name) => (answers[name] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  const guard = createTargetGuard(parseTargetPolicy(allowed, denyLinkLocal).policy, { resolver, onRefused: (e) => refused.push(e) });
  return { guard, refused };
};

type Answer = { err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number };
const lookup = (guard: ReturnType<typeof guardOf>['guard'], name: string, options: { all?: boolean; family?: number } = {}): Promise<Answer> =>
  new Promise((resolve) => guard.lookup(name, options, (err, address, family) => resolve({ err, address, family })));

test('a name resolving to a link-local address is refused with ERR_SSRF_BLOCKED, before any socket', async () => {
  const { guard, refused } = guardOf('', { 'metadata.internal': ['169.254.169.254'] });
  const got = await lookup(guard, 'metadata.internal', { all: true });
  expect(got.err).toBeInstanceOf(TargetRefusedError);
  expect(got.err).toMatchObject({ code: 'ERR_SSRF_BLOCKED', reason: 'link_local', host: 'metadata.internal' });
  // The report's message names the host and the rule, not the address it resolved to.
  expect(got.err!.message).toBe('target metadata.internal refused by the edge agent: a link-local or cloud metadata address (EDGE_DENY_LINK_LOCAL)');
  expect(refused.map((e) => e.address)).toEqual(['169.254.169.254']);
});

test('only the addresses the policy allows reach the socket (a rebinding answer mixing them)', async () => {
  const { guard } = guardOf('10.0.0.0/8', { 'mixed.internal': ['169.254.169.254', '127.0.0.1', '10.1.2.3', '::1'] });
  expect((await lookup(guard, 'mixed.internal', { all: true })).address).toEqual([{ address: '10.1.2.3', family: 4 }]);
  expect(await lookup(guard, 'mixed.internal')).toMatchObject({ err: null, address: '10.1.2.3', family: 4 });
  expect((await lookup(guard, 'mixed.internal', { family: 6 })).err).toMatchObject({ code: 'ERR_SSRF_BLOCKED', reason: 'not_allowed' });
});

test('a listed host name is connected to whatever private address it resolves to', async () => {
  const { guard } = guardOf('hooks.internal', { 'hooks.internal': ['127.0.0.1'], 'other.internal': ['127.0.0.1'] });
  expect(await lookup(guard, 'hooks.internal')).toMatchObject({ err: null, address: '127.0.0.1' });
  expect((await lookup(guard, 'other.internal')).err).toMatchObject({ code: 'ERR_SSRF_BLOCKED', reason: 'not_allowed' });
});

test('a name that resolves to nothing is a DNS error, not a refusal', async () => {
  const { guard } = guardOf('', {});
  expect((await lookup(guard, 'nowhere.internal')).err).toMatchObject({ code: 'ENOTFOUND' });
});

test('checkUrl refuses URL hosts that are addresses (connected to without a lookup), in any notation', () => {
  const { guard } = guardOf('10.0.0.0/8', {});
  expect(guard.checkUrl('http://127.0.0.1:8080/x')).toMatchObject({ reason: 'not_allowed', host: '127.0.0.1' });
  expect(guard.checkUrl('http://[::1]/x')).toMatchObject({ reason: 'not_allowed', host: '::1' });
  expect(guard.checkUrl('http://0x7f.1/x')).toMatchObject({ reason: 'not_allowed', host: '127.0.0.1' });
  expect(guard.checkUrl('http://0xa9fea9fe/')).toMatchObject({ reason: 'link_local', host: '169.254.169.254' });
  expect(guard.checkUrl('http://[::ffff:169.254.169.254]/')).toMatchObject({ reason: 'link_local' });
  expect(guard.checkUrl('http://10.1.2.3/x')).toBeNull();
  // Names are checked at lookup; an unparsable URL fails in the send as before.
  expect(guard.checkUrl('http://hooks.internal/x')).toBeNull();
  expect(guard.checkUrl('not a url')).toBeNull();
});
