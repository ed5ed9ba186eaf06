import { randomBytes } from 'node:crypto';
import { hmac } from './hmac';

/** `whsec_<base64>` secrets as Standard Webhooks defines them. */
export function newWhsecSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function whsecKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}

/**
 * Standard Webhooks signature: `v1,<base64 HMAC-SHA256(key, "<id>.<ts>.<body>")>`, one per
 * active secret, space-separated (so consumers accept during rotation).
 */
export function signStandardWebhook(secrets: string[], id: string, timestamp: number, body: Buffer): Record<string, string> {
  const sigs = secrets.map((s) => `v1,${hmac('sha256', whsecKey(s), `${id}.${timestamp}.`, body).toString('base64')}`);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': sigs.join(' ') };
}
