// mTLS: a local HTTPS receiver on 127.0.0.1 that requires a client certificate signed by
// its CA. Certificates are generated for this test with openssl.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHarness, type Harness } from './deliverer-fixtures';

jest.setTimeout(60_000);

let h: Harness;
let dir: string;
let server: Server;
let url: string;
const pem: Record<string, string> = {};
const seen: { cn: string | undefined; body: string }[] = [];

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A key and a certificate signed by the test CA, with the given extensions. */
function issue(name: string, subject: string, ext: string): void {
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
  openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hl-mtls-'));
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=Hookline Test CA');
  issue('server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  issue('client', '/CN=hookline-client', 'extendedKeyUsage=clientAuth\n');
  // A client certificate from a CA the server does not trust.
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'rogue.key', '-out', 'rogue.crt', '-days', '1', '-subj', '/CN=rogue');
  for (const f of ['ca.crt', 'server.key', 'server.crt', 'client.key', 'client.crt', 'rogue.key', 'rogue.crt']) pem[f] = readFileSync(join(dir, f), 'utf8');

  server = createServer({ key: pem['server.key'], cert: pem['server.crt'], ca: pem['ca.crt'], requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ cn: (req.socket as TLSSocket).getPeerCertificate().subject?.CN, body: Buffer.concat(chunks).toString() });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  url = `https://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mtls`;
  h = await createHarness('dlvmtls');
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('with the right client certificate the delivery is accepted', async () => {
  const dst = await h.destination(url, { config: { mtls: { cert: pem['client.crt'], key_sealed: h.box.seal(pem['client.key']!), ca: pem['ca.crt'] } } });
  const d = await h.delivery(dst.id, { body: '{"mtls":true}' });
  expect(await h.run([d.deliveryId])).toMatchObject({ delivered: 1 });
  expect(seen).toEqual([{ cn: 'hookline-client', body: '{"mtls":true}' }]);
});

test('without a client certificate, or with an untrusted one, the handshake is refused (error_kind tls)', async () => {
  const none = await h.destination(url, { config: { mtls: { ca: pem['ca.crt'] }, max_attempts: 1 } });
  const rogue = await h.destination(url, { config: { mtls: { cert: pem['rogue.crt'], key_sealed: h.box.seal(pem['rogue.key']!), ca: pem['ca.crt'] }, max_attempts: 1 } });
  const d1 = await h.delivery(none.id);
  const d2 = await h.delivery(rogue.id);
  expect(await h.run([d1.deliveryId, d2.deliveryId])).toMatchObject({ exhausted: 2 });
  for (const d of [d1, d2]) expect((await h.attempts(d.deliveryId))[0]).toMatchObject({ error_kind: 'tls', status_code: null });
  expect(seen).toHaveLength(1);
});

test('a server certificate the destination does not trust is a tls failure too', async () => {
  const dst = await h.destination(url, { config: { max_attempts: 1 } });
  const d = await h.delivery(dst.id);
  await h.run([d.deliveryId]);
  expect((await h.attempts(d.deliveryId))[0]).toMatchObject({ error_kind: 'tls' });
});
