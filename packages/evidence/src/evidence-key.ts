import { createHash } from 'node:crypto';
import { hmac } from '@hookline/signing';

/** The key that signs receipts and roots, and a short public id that names it. */
export interface EvidenceKey {
  key: Buffer;
  id: string;
}

/**
 * EVIDENCE_KEY when set, else a key derived from SECRETS_KEY under its own label (so the
 * receipt key is never the key that encrypts secrets at rest). The id is a hash prefix:
 * it tells a verifier which key signed, and reveals nothing of it.
 */
export function evidenceKey(secretsKey: string, override?: string): EvidenceKey {
  const key = override ? createHash('sha256').update(override).digest() : hmac('sha256', secretsKey, 'hookline/evidence-receipts/v1');
  return { key, id: `ek_${createHash('sha256').update(key).digest('hex').slice(0, 16)}` };
}
