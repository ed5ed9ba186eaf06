/**
 * The dedup key of one inbound request. A provider's delivery id, when the request has one,
 * is the key whatever an `Idempotency-Key` header says: for Stripe (body `id`) and Standard
 * Webhooks (`webhook-id`) it is covered by the signature, while the header never is, so
 * letting the header win would let anyone replay a captured signed request as a new event
 * within the tolerance window just by adding a fresh key. The header is the key only when
 * the provider gives no id (generic sources, or a provider request without its id).
 *
 * `explicit` is the header's key when it is the one used: such a key is held to its body
 * (a reuse with another body is a 409); a provider's id is not (providers resend what they
 * resend and cannot act on a 409).
 */
export function dedupKeyOf(idempotencyKey: string | string[] | undefined, providerId: string | null): { key: string | null; explicit: string | null } {
  if (providerId) return { key: providerId, explicit: null };
  const explicit = (Array.isArray(idempotencyKey) ? idempotencyKey[0] : idempotencyKey)?.trim() || null;
  return { key: explicit, explicit };
}
