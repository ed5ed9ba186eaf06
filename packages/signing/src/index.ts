export { hmac, safeEqual } from './hmac';
export { signServiceRequest, verifyServiceSignature, parseServiceSignature, type VerifyResult, type VerifyServiceSignatureOptions } from './service-signature';
export { signStandardWebhook, newWhsecSecret, whsecKey } from './standard-webhooks';
export { whsecSecretProblem, whsecFieldErrors, WHSEC_MIN_BYTES, WHSEC_MAX_BYTES } from './whsec-secret';
export { createSecretBox, type SecretBox } from './secret-box';
export { API_SCOPES, MCP_SCOPES, type Scope, newApiKey, hashApiKey, hashPassword, verifyPassword } from './credentials';
export { PROVIDERS, type Provider, isProvider } from './providers';
export { withRandomBytes, randomIdString } from './random-pool';
export { USER_ROLES, type UserRole, isUserRole, scopesOfRole } from './roles';
