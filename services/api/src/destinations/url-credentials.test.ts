import { hasMaskedCredentials, hasUrlCredentials, hasUserinfo, maskUrlCredentials, normaliseCredentialUrl, restoreUrlCredentials } from './url-credentials';

describe('URL credentials are judged as the URL parser (and the deliverer) reads them', () => {
  const odd = ['https:///alice:s3cr3t@hooks.example.com/x', 'https:\\\\alice:s3cr3t@hooks.example.com/x', 'HTTPS:alice:s3cr3t@hooks.example.com/x'];

  it('finds and masks userinfo after extra slashes or backslashes', () => {
    for (const url of odd) {
      expect(hasUserinfo(url)).toBe(true);
      expect(maskUrlCredentials(url)).toBe('https://alice:****@hooks.example.com/x');
      expect(normaliseCredentialUrl(url)).toBe('https://alice:s3cr3t@hooks.example.com/x');
    }
  });

  it('leaves URLs without a credential as given, and masks unparsable text by its shape', () => {
    expect(hasUserinfo('HTTPS://Example.test:443/a/../b')).toBe(false);
    expect(normaliseCredentialUrl('HTTPS://Example.test:443/a/../b')).toBe('HTTPS://Example.test:443/a/../b');
    expect(maskUrlCredentials('https:///u:pw@exa mple/')).toBe('https:///****@exa mple/');
  });
});

describe('credential query values', () => {
  it('masks only values of credential-named parameters, keeping the rest as given', () => {
    expect(maskUrlCredentials('HTTPS://Example.test:443/a?api_key=K1&sig=s&Access%5Ftoken=T&q=a+b&token=&key#x?token=f')).toBe(
      'HTTPS://Example.test:443/a?api_key=****&sig=****&Access%5Ftoken=****&q=a+b&token=&key#x?token=f',
    );
    expect(maskUrlCredentials('https://example.test/a#frag?token=abc')).toBe('https://example.test/a#frag?token=abc');
    expect(hasUrlCredentials('https://example.test/?x-api-key=1')).toBe(true);
    expect(hasUrlCredentials('https://example.test/?token=')).toBe(false);
    expect(hasMaskedCredentials('https://example.test/?token=****')).toBe(true);
    expect(hasMaskedCredentials('https://example.test/?q=****')).toBe(false);
  });

  it('puts stored values back only when nothing else in the URL changed', () => {
    const stored = 'https://example.test/p?a=1&token=T';
    expect(restoreUrlCredentials('https://example.test/p?a=1&token=****', stored)).toBe(stored);
    expect(restoreUrlCredentials('https://example.test/q?a=1&token=****', stored)).toBeNull();
    expect(restoreUrlCredentials('https://example.test/p?a=2&token=****', stored)).toBeNull();
    expect(restoreUrlCredentials('https://evil.test/p?a=1&token=****', stored)).toBeNull();
    expect(restoreUrlCredentials('https://u:pw@example.test/p?a=1&token=****', stored)).toBe('https://u:pw@example.test/p?a=1&token=T');
  });
});
