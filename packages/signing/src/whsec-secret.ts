/**
 * Standard Webhooks symmetric secrets: 24 to 64 random bytes, serialized as standard
 * base64 (padded), conventionally after `whsec_`. The reference libraries strip the prefix
 * when present and decode the rest strictly (`standardwebhooks` throws on anything else),
 * while `whsecKey` decodes leniently: a secret that is not strict base64 would sign with
 * other bytes than a consumer's library derives, or with none at all (`'!!!!'` → 0 bytes).
 * Checked on write only: secrets stored before this check keep signing as they did.
 */
export const WHSEC_MIN_BYTES = 24;
export const WHSEC_MAX_BYTES = 64;

const RULE = `must be whsec_ followed by standard base64 (A-Z a-z 0-9 + /, = padding) of ${WHSEC_MIN_BYTES} to ${WHSEC_MAX_BYTES} random bytes`;

/** Why `secret` is not a Standard Webhooks secret, or null when it is one. */
export function whsecSecretProblem(secret: string): string | null {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const bytes = Buffer.from(encoded, 'base64');
  // Node's decoder skips what it does not know (and takes base64url): only the canonical
  // encoding of the decoded bytes is strict base64.
  if (bytes.toString('base64') !== encoded) return RULE;
  if (bytes.length < WHSEC_MIN_BYTES || bytes.length > WHSEC_MAX_BYTES) return `${RULE} (it encodes ${bytes.length})`;
  return null;
}

/**
 * Field errors (`{ field, message }`, as `AppError.validation` takes them) for a secret or
 * a list of secrets given in `field` (`field.<i>` for each bad entry of a list); none when
 * `value` is undefined or every secret is valid.
 */
export function whsecFieldErrors(field: string, value: string | readonly string[] | undefined): { field: string; message: string }[] {
  if (value === undefined) return [];
  const entries: [string, string][] = typeof value === 'string' ? [[field, value]] : value.map((s, i) => [`${field}.${i}`, s]);
  return entries.flatMap(([name, secret]) => {
    const message = whsecSecretProblem(secret);
    return message ? [{ field: name, message }] : [];
  });
}
