import { redactSecretLookingKeys, secretLookingKeyErrors } from './secret-config-keys';
import { isCredentialHeader } from '@hookline/logger';

describe('secret-looking config keys', () => {
  it('are refused at any depth, naming the full path', () => {
    const config = { oauth: { client_secret: 'cs_1', client_id: 'id' }, authorization: 'Bearer x', list: [{ apikey: 'k' }], region: 'eu' };
    expect(secretLookingKeyErrors(config, 'hint').map((e) => e.field)).toEqual(['config.oauth.client_secret', 'config.authorization', 'config.list.0.apikey']);
  });

  it('skips settings checked their own way, and nulls on PATCH', () => {
    expect(secretLookingKeyErrors({ headers: { Authorization: 'x' }, api_key: null }, 'hint', { skip: ['headers'], allowNull: true })).toEqual([]);
  });

  it('are shown redacted at any depth (nulls kept), for rows stored before the rule', () => {
    expect(redactSecretLookingKeys({ oauth: { client_secret: 'cs_1', client_id: 'id' }, rules: { 'x-token': null }, region: 'eu' })).toEqual({
      oauth: { client_secret: '[redacted]', client_id: 'id' },
      rules: { 'x-token': null },
      region: 'eu',
    });
  });

  it('credential headers include every secret-looking name', () => {
    for (const h of ['Authorization', 'Proxy-Authorization', 'Cookie', 'X-Api-Key', 'X-Auth-User', 'X-Jwt', 'X-Bearer', 'X-Pwd']) expect(isCredentialHeader(h)).toBe(true);
    expect(isCredentialHeader('X-Request-Source')).toBe(false);
  });
});
