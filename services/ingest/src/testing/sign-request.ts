import { createHmac } from 'node:crypto';
import type { Provider } from '@hookline/signing';

/**
 * Signs a request the way each provider documents it, straight from the recipe and
 * node:crypto (never with the code under test), for unit and integration tests.
 * `url` is the full public URL (Twilio signs it); `t` is unix seconds.
 */
export function signAs(provider: Provider, secret: string, body: string | Buffer, opts: { t?: number; url?: string; id?: string } = {}): Record<string, string> {
  const t = opts.t ?? Math.floor(Date.now() / 1000);
  const mac = (alg: 'sha256' | 'sha1', key: string | Buffer, ...parts: (string | Buffer)[]): Buffer => {
    const h = createHmac(alg, key);
    for (const p of parts) h.update(p);
    return h.digest();
  };
  switch (provider) {
    case 'stripe':
      return { 'Stripe-Signature': `t=${t},v1=${mac('sha256', secret, `${t}.`, body).toString('hex')},v0=ignored` };
    case 'github':
      return { 'X-Hub-Signature-256': `sha256=${mac('sha256', secret, body).toString('hex')}` };
    case 'shopify':
      return { 'X-Shopify-Hmac-Sha256': mac('sha256', secret, body).toString('base64') };
    case 'twilio': {
      const p = new URLSearchParams(body.toString());
      const data = (opts.url ?? '') + [...p.keys()].sort().map((k) => k + p.get(k)!).join('');
      return { 'X-Twilio-Signature': mac('sha1', secret, data).toString('base64') };
    }
    case 'standard-webhooks': {
      const id = opts.id ?? 'msg_test';
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return { 'webhook-id': id, 'webhook-timestamp': String(t), 'webhook-signature': `v1,${mac('sha256', key, `${id}.${t}.`, body).toString('base64')}` };
    }
    case 'generic':
      return { 'X-Service-Timestamp': String(t), 'X-Service-Signature': `t=${t},v1=${mac('sha256', secret, `${t}.`, body).toString('hex')}` };
  }
}

/** The header that carries the signature, per provider (what "missing header" removes). */
export const SIGNATURE_HEADER: Record<Provider, string> = {
  stripe: 'Stripe-Signature',
  github: 'X-Hub-Signature-256',
  shopify: 'X-Shopify-Hmac-Sha256',
  twilio: 'X-Twilio-Signature',
  'standard-webhooks': 'webhook-signature',
  generic: 'X-Service-Signature',
};
