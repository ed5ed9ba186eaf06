/**
 * The dedup key of one inbound request. A provider's delivery id, when the request has one,
 * is the key whatever an `Idempotency-Key` header says: for Stripe (body `id`), Standard
 * Webhooks (`webhook-id`) and signed generic requests (`t` + body hash) it is covered by the
 * signature, while the header never is, so letting the header win would let anyone replay a
 * captured signed request as a new event within the tolerance window just by adding a fresh
 * key. The header is the key only when the provider gives no id (unsigned generic sources, or
 * a provider request without its id).
 *
 * `explicit` is the header's key when it is the one used: such a key is held to its body
 * (a reuse with another body is a 409); a provider's id is not (providers resend what they
 * resend and cannot act on a 409).
 *
 * `retryKey` is the header's key beside a provider id that names one signed request rather
 * than one delivery (`perSignature`: generic). A sender that signs each retry afresh gets a
 * new id per retry, so the header is what ties a retry to its first attempt: it is held as a
 * second key, explicit (ingest-event.ts), while the signed id stays the one that cannot be
 * bypassed.
 */
export function dedupKeyOf(
  idempotencyKey: string | string[] | undefined,
  providerId: string | null,
  perSignature = false,
): { key: string | null; explicit: string | null; retryKey: string | null } {
  const header = (Array.isArray(idempotencyKey) ? idempotencyKey[0] : idempotencyKey)?.trim() || null;
  if (providerId) return { key: providerId, explicit: null, retryKey: perSignature ? header : null };
  return { key: header, explicit: header, retryKey: null };
}
