/** Ingester providers (SPEC.md: `generic` or one named after the source). Never rename one. */
export const PROVIDERS = ['generic', 'stripe', 'github', 'shopify', 'twilio', 'standard-webhooks'] as const;
export type Provider = (typeof PROVIDERS)[number];
export function isProvider(v: unknown): v is Provider {
  return typeof v === 'string' && (PROVIDERS as readonly string[]).includes(v);
}
