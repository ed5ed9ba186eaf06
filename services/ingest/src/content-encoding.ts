import { AppError } from '@hookline/errors';

/**
 * Ingest stores, filters and forwards the exact bytes received as the body itself: it does
 * not decode content codings. A body sent with any Content-Encoding but `identity`
 * (case-insensitive; a list is refused if any coding in it is not identity) is answered
 * 415 unsupported-media-type with `Accept-Encoding: identity` (RFC 9110 §15.5.16), and
 * nothing is stored; otherwise it would be kept and forwarded without its encoding,
 * counted against the limit compressed, and unreadable to filters.
 */
export function unsupportedEncoding(header: string | string[] | undefined): AppError | null {
  const codings = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '');
  const refused = codings.filter((c) => c !== 'identity');
  if (refused.length === 0) return null;
  return new AppError(
    'unsupported-media-type',
    `Content-Encoding ${refused.join(', ')} is not supported: send the body unencoded.`,
    {},
    { 'accept-encoding': 'identity' },
  );
}
