import { isCredentialHeader, isCredentialQueryName, isSecretLookingKey } from './secret-names';

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

test('a word run together with a credential word is read as the two', () => {
  const secret = ['webhooksecret', 'clientsecret', 'authtoken', 'apitoken', 'accesstoken', 'userpassword', 'passwort', 'hubsignature256', 'shopifyhmacsha256', 'signingkey', 'sessionid', 'webhook_secrets', 'X-Webhooksecret'];
  expect(secret.filter((k) => !isSecretLookingKey(k))).toEqual([]);
  // Settings keys are refused, so this rule stays strict: a key word only after a credential kind.
  expect(['turkey', 'hockey', 'tokens', 'signature_header_name', 'oauth2', 'base64', 'retry_schedule_ms'].filter((k) => isSecretLookingKey(k))).toEqual([]);
});

test('credential headers: any name containing a credential word, run together or not, and every secret-looking name', () => {
  const credential = [
    'Authorization', 'Proxy-Authorization', 'X-Api-Key', 'X-Auth-User', 'X-MCP-Key', 'X-Token-Id', 'Cookie', 'X-Signature', 'X-Hub-Signature-256', 'X-Webhook-Hmac',
    // One word: the audit's misses.
    'X-Authtoken', 'X-Apitoken', 'X-Accesstoken', 'X-Webhooksecret', 'X-Clientsecret', 'X-Sessiontoken', 'X-Userpassword', 'X-Authkey', 'X-Signingkey', 'X-Hubsignature', 'X-Tokenid',
    // Sessions and their cookies' names.
    'X-Session', 'JSESSIONID', 'PHPSESSID', 'sessionid', 'SessionId', 'connect.sid', 'sid', 'X-SID', 'X-Sess',
    // Other spellings.
    'X-Passwort', 'X-Passw0rd', 'X-Pwd', 'X-Authz', 'X-Authn', 'X-Oauth-Token', 'Passcode', 'X-Pass', 'X-Api-Pass', 'X-Creds', 'Credentials-Id', 'X-Apikey', 'X-Api-Keys', 'X-Webhook-Sig', 'X-Jwt', 'X-Bearer',
  ];
  expect(credential.filter((h) => !isCredentialHeader(h))).toEqual([]);
  // Ordinary headers holding a short credential word's letters stay shown.
  const plain = [
    'Content-Type', 'Accept', 'X-Request-Id', 'X-Correlation-Id', 'traceparent', 'X-Forwarded-For', 'X-Hmac-Algorithm', 'X-Private-Network', 'X-Author', 'X-Authority', 'X-Idempotency-Id', 'X-Request-Source',
    'X-Side', 'X-Side-Channel', 'X-Inside', 'X-Sidecar', 'X-Design', 'X-Signal', 'X-Consignment-Id', 'X-Credit-Limit', 'X-Assessment', 'X-Process-Id', 'X-Bypass-Cache', 'X-Passenger-Count', 'X-Keyword', 'X-Country-Code',
  ];
  expect(plain.filter((h) => isCredentialHeader(h))).toEqual([]);
});

test('credential query parameters: credential header names, and code (Azure Functions keys)', () => {
  expect(['code', 'Code', 'hapikey', 'apitoken', 'authtoken', 'sid', 'session', 'sessionid', 'access_token', 'api_key', 'key', 'sig', 'X-Amz-Signature', 'X-Amz-Credential'].filter((n) => !isCredentialQueryName(n))).toEqual([]);
  expect(['q', 'page', 'src', 'state', 'id', 'country_code', 'zip_code', 'keyword', 'sv', 'se', 'sp', 'client_id', 'redirect_uri', 'scope'].filter((n) => isCredentialQueryName(n))).toEqual([]);
  // `code` is a credential as a whole query name only, not as a header.
  expect(isCredentialHeader('code')).toBe(false);
});
