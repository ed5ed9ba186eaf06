import type { Provider } from '@hookline/signing';
import * as generic from './generic';
import * as github from './github';
import * as shopify from './shopify';
import * as standardWebhooks from './standard-webhooks';
import * as stripe from './stripe';
import * as twilio from './twilio';
import type { ProviderAdapter } from './types';

export type { ProviderAdapter, ProviderContext, VerifyResult } from './types';

/** Verification, event type and delivery id, by ingester provider. */
export const PROVIDER_ADAPTERS: Record<Provider, ProviderAdapter> = {
  generic,
  stripe,
  github,
  shopify,
  twilio,
  'standard-webhooks': standardWebhooks,
};
