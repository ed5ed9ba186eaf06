export * from './wire';
export { countsAgainstDestination } from './send-result';
export { destinationSettings, type DeliveryDefaults, type DestinationSettings, type MtlsSettings } from './destination-settings';
export { buildHeaders, childTraceparent, type OutboundMessage } from './request-headers';
export { decide, backoffMs, isRetryable, parseRetryAfter, type BackoffPolicy, type Decision } from './retry-policy';
export { recordOutcomes, recordOwnedOutcomes, type Outcome, type OwnedOutcomes, type RecordOptions } from './record-outcomes';
export { createCoalescer } from './coalescer';
export { deliveryPolicyEnv, edgeStatusEnv, deliveryPolicy, parseSchedule, type DeliveryPolicy, type DeliveryPolicyConfig } from './policy-env';
export { createSecretCache } from './secret-cache';
