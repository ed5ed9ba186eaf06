// What an attempt keeps of an answer, and the Basic credentials a URL may carry: shared by
// the deliverer and the edge agent, so an attempt is recorded the same way on both paths.

/** The only response headers an attempt records. */
export const HEADERS_OF_INTEREST = ['content-type', 'content-length', 'retry-after', 'location', 'x-request-id', 'x-correlation-id', 'server'];

export function pickHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of HEADERS_OF_INTEREST) {
    const v = h[k];
    if (v !== undefined) out[k] = (Array.isArray(v) ? v.join(', ') : v).slice(0, 500);
  }
  return out;
}

/** At most `limit` bytes as text; PostgreSQL text cannot hold NUL. */
export function truncateBody(bytes: Buffer, limit: number): string {
  return bytes.subarray(0, limit).toString('utf8').replace(/\0/g, '');
}

/** Reads at most `limit` bytes, then stops (the rest is discarded with the stream). */
export async function readLimited(body: AsyncIterable<Buffer> & { destroy(): unknown }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) break;
    }
  } catch {
    /* a body cut short still tells us the status; keep what arrived */
  }
  body.destroy();
  return truncateBody(Buffer.concat(chunks), limit);
}

/** `https://user:pass@host/…` is sent as `Authorization: Basic …`. */
export function basicAuth(url: URL): Record<string, string> {
  if (!url.username && !url.password) return {};
  const cred = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  return { authorization: `Basic ${Buffer.from(cred).toString('base64')}` };
}
