import { isCredentialHeader, isSecretLookingKey } from './secret-names';

test('every spelling of a credential is secret-looking, whatever its case or separators', () => {
  const secret = [
    'secret', 'client_secret', 'clientSecret', 'X-Client-Secret', 'password', 'db_passwd', 'pwd', 'passphrase', 'credentials', 'bearer', 'jwt', 'cookie',
    'token', 'access_token', 'refreshToken', 'signature', 'x_signature', 'sig', 'webhook_hmac', 'auth', 'basicAuth', 'proxyAuthorization', 'authorization',
    'key', 'api_key', 'apiKey', 'apikey', 'consumer_key', 'webhook_key', 'shared_key', 'signing_key', 'private_key', 'privateKey', 'session_id', 'auth_header', 'token_value',
    'x-hub-signature-256', 'x-shopify-hmac-sha256', 'hmac_sha256', 'api_key_2', 'signature_v1', 'Set-Cookie', 'refresh_token', 'clusterKey', 'SECRETS_KEY',
  ];
  expect(secret.filter((k) => !isSecretLookingKey(k))).toEqual([]);
});

test("ordinary names that contain a credential's letters are not", () => {
  const plain = ['author', 'auth_type', 'signature_header', 'hmac_algorithm', 'session_ttl', 'max_tokens', 'monkey', 'keyboard', 'idempotency_key', 'routing_key', 'partition_key', 'public_key', 'timeout_ms', 'event_type_path', 'tolerance_seconds', 'ip_allowlist', 'rate_limit_per_second', 'oauth', 'token_url', 'api_key_id', 'sha256', 'payload_sha256', 'signature_count', 'v1'];
  expect(plain.filter((k) => isSecretLookingKey(k))).toEqual([]);
});

test('credential headers: any secret-looking name, and any with the word auth, key or token', () => {
  expect(['Authorization', 'X-Api-Key', 'X-Auth-User', 'X-MCP-Key', 'X-Token-Id', 'Cookie', 'X-Signature'].filter((h) => !isCredentialHeader(h))).toEqual([]);
  expect(['Content-Type', 'X-Hmac-Algorithm', 'X-Private-Network', 'X-Author', 'X-Request-Id', 'X-Idempotency-Id'].filter((h) => isCredentialHeader(h))).toEqual([]);
});
