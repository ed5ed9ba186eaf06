// The X-Service-Signature verification snippet in services/deliverer/README.md, run as a
// consumer would run it against what the deliverer signs: with either secret during a
// rotation, and with a secret given without the whsec_ prefix (the key is then the whole
// secret, decoded, as `whsecKey` does).
import * as crypto from 'node:crypto';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { newWhsecSecret } from '@hookline/signing';
import { signatureHeaders } from '@hookline/delivery';

const README = readFileSync(resolve(__dirname, '../services/deliverer/README.md'), 'utf8');

/** The js block after the **X-Service-Signature** heading, as a function returning its `ok`. */
function snippet(): (secret: string, headers: Record<string, string>, rawBody: Buffer) => boolean {
  const at = README.indexOf('**X-Service-Signature**');
  const block = /```js\n([\s\S]*?)```/.exec(README.slice(at));
  if (at < 0 || !block) throw new Error('the X-Service-Signature snippet is missing from services/deliverer/README.md');
  const code = block[1]!.replace(/^import \{ createHmac, timingSafeEqual \} from 'node:crypto';\n/m, '');
  // `crypto` too, for a snippet written against `require('node:crypto')`.
  const run = new Function('crypto', 'createHmac', 'timingSafeEqual', 'Buffer', 'secret', 'req', 'rawBody', `${code}\nreturn ok;`);
  return (secret, headers, rawBody) => run(crypto, createHmac, timingSafeEqual, Buffer, secret, { headers }, rawBody) as boolean;
}

const body = Buffer.from('{"amount": 100,\n "note": "caf\u00e9"}\n');

test('the snippet imports only createHmac and timingSafeEqual from node:crypto (the test provides those)', () => {
  const at = README.indexOf('**X-Service-Signature**');
  expect(/```js\n([\s\S]*?)```/.exec(README.slice(at))?.[1]).toMatch(/^import \{ createHmac, timingSafeEqual \} from 'node:crypto';\n/);
});

test('verifies a rotated delivery with either secret, and refuses another secret, another body or a stale timestamp', () => {
  const verify = snippet();
  const [newest, previous] = [newWhsecSecret(), newWhsecSecret()];
  const headers = signatureHeaders([newest, previous], 'dlv_doc', body);
  expect(verify(newest, headers, body)).toBe(true);
  expect(verify(previous, headers, body)).toBe(true);
  expect(verify(newWhsecSecret(), headers, body)).toBe(false);
  expect(verify(newest, headers, Buffer.from('{"amount": 999}'))).toBe(false);
  const stale = signatureHeaders([newest, previous], 'dlv_old', body, Math.floor(Date.now() / 1000) - 600);
  expect(verify(previous, stale, body)).toBe(false);
});

test('derives the key as the deliverer does, with or without the whsec_ prefix', () => {
  const verify = snippet();
  const bare = Buffer.alloc(32, 0x3c).toString('base64');
  expect(verify(bare, signatureHeaders([bare], 'dlv_bare', body), body)).toBe(true);
  const prefixed = `whsec_${bare}`;
  expect(verify(prefixed, signatureHeaders([prefixed], 'dlv_prefixed', body), body)).toBe(true);
});
