import { X509Certificate } from 'node:crypto';

/**
 * PEM certificate bundles, read once for every place that takes one: a destination's
 * `config.mtls.cert` / `ca` (the api refuses anything else, and its views show only the
 * certificates), and hookline-edge's EDGE_CA. No other import: hookline-edge is bundled on
 * its own (imported as @hookline/delivery/src/certificate-pem).
 */

// A whole PEM block: its BEGIN label, a body that runs into no other boundary line, and the
// matching END label (so an unfinished block never takes in the next one).
const PEM_BLOCK = /-----BEGIN ([^-\r\n]{1,64})-----(?:(?!-----)[\s\S])*-----END \1-----/g;
const BEGIN_LINE = /-----BEGIN /g;
// Labels a refusal may name; any other is "another PEM block" (the text is the writer's, never echoed).
const KNOWN_LABELS = new Set(['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY', 'DSA PRIVATE KEY', 'ENCRYPTED PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'PUBLIC KEY', 'RSA PUBLIC KEY', 'CERTIFICATE REQUEST', 'NEW CERTIFICATE REQUEST', 'TRUSTED CERTIFICATE', 'X509 CRL', 'PKCS7', 'CMS', 'EC PARAMETERS', 'DH PARAMETERS']);

function parses(block: string): boolean {
  try {
    return Boolean(new X509Certificate(block));
  } catch {
    return false;
  }
}

/** The CERTIFICATE blocks of a PEM text, in order (anything else left out: other blocks, text between them). */
export function certificateBlocks(pem: string): string[] {
  return [...pem.matchAll(PEM_BLOCK)].filter((m) => m[1] === 'CERTIFICATE').map((m) => m[0]);
}

/**
 * Text as shown: its CERTIFICATE blocks only, one per line group, so that a private key (or
 * anything else) stored beside a certificate before such text was refused never appears in
 * a view; '' when it holds none.
 */
export function certificatesOnly(pem: string): string {
  const blocks = certificateBlocks(pem);
  return blocks.length === 0 ? '' : `${blocks.join('\n')}\n`;
}

/** True when the text holds at least one CERTIFICATE block and each one parses (other text is ignored, as TLS ignores it). */
export function isCertificateBundle(pem: string): boolean {
  const blocks = certificateBlocks(pem);
  return blocks.length > 0 && blocks.every(parses);
}

/**
 * Why a text is not a bundle of certificates only, or null when it is: it must hold one or
 * more PEM CERTIFICATE blocks that parse as X.509, and no other PEM block (a private key,
 * a certificate request, …; named by its label, never quoted) nor an unfinished one.
 * Text outside the blocks (openssl's subject= / Bag Attributes lines) is allowed.
 */
export function certificateBundleProblem(pem: string): string | null {
  const blocks = [...pem.matchAll(PEM_BLOCK)];
  const others = [...new Set(blocks.map((m) => m[1]!).filter((label) => label !== 'CERTIFICATE').map((l) => (KNOWN_LABELS.has(l) ? `a ${l} block` : 'another PEM block')))];
  if (others.length > 0) return `must hold PEM CERTIFICATE blocks only; found ${others.join(', ')} (a private key goes in config.mtls.key, write-only)`;
  if ((pem.match(BEGIN_LINE) ?? []).length !== blocks.length) return 'holds a PEM block without its matching END line';
  if (blocks.length === 0) return 'must hold one or more PEM CERTIFICATE blocks (-----BEGIN CERTIFICATE-----)';
  const bad = blocks.findIndex((m) => !parses(m[0]));
  if (bad >= 0) return `PEM CERTIFICATE block ${bad + 1} is not a readable X.509 certificate`;
  return null;
}
