import { fakeKeyBlock, TEST_CA_CERT, TEST_CLIENT_CERT } from '../../../test/certificate-fixtures';
import { certificateBundleProblem, certificatesOnly, isCertificateBundle } from './certificate-pem';

test('certificates only: one or a bundle, with text between blocks, pass', () => {
  expect(certificateBundleProblem(TEST_CLIENT_CERT)).toBeNull();
  expect(certificateBundleProblem(TEST_CLIENT_CERT + TEST_CA_CERT)).toBeNull();
  expect(certificateBundleProblem(`subject=/CN=hookline-test-client\n${TEST_CLIENT_CERT}\n# the CA\n${TEST_CA_CERT.replace(/\n/g, '\r\n')}`)).toBeNull();
});

test('a key beside a certificate, an unreadable or unfinished block, or no certificate is refused, never quoting the text', () => {
  const problems = [
    TEST_CLIENT_CERT + fakeKeyBlock('SECRET_A'),
    fakeKeyBlock('SECRET_B', 'EC PRIVATE KEY') + TEST_CLIENT_CERT,
    TEST_CLIENT_CERT + fakeKeyBlock('SECRET_C', 'SECRET_C LABEL'),
    `${TEST_CLIENT_CERT}-----BEGIN PRIVATE KEY-----\nSECRET_D\n`,
    '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n',
    'SECRET_E',
    '',
  ].map(certificateBundleProblem);
  expect(problems.every((p) => typeof p === 'string')).toBe(true);
  expect(problems.join(' ')).not.toContain('SECRET');
  expect(problems[0]).toMatch(/CERTIFICATE blocks only; found a PRIVATE KEY block/);
  expect(problems[2]).toMatch(/another PEM block/);
});

test('shown: the certificate blocks only; the edge check still ignores other blocks', () => {
  expect(certificatesOnly(TEST_CLIENT_CERT + fakeKeyBlock('SECRET') + TEST_CA_CERT)).toBe(`${TEST_CLIENT_CERT.trim()}\n${TEST_CA_CERT.trim()}\n`);
  // An unfinished certificate block does not take the key after it in.
  expect(certificatesOnly(`-----BEGIN CERTIFICATE-----\nAAAA\n${fakeKeyBlock('SECRET')}${TEST_CA_CERT}`)).toBe(TEST_CA_CERT);
  expect(certificatesOnly(fakeKeyBlock('SECRET'))).toBe('');
  expect(isCertificateBundle(TEST_CA_CERT + fakeKeyBlock('SECRET'))).toBe(true);
  expect(isCertificateBundle(fakeKeyBlock('SECRET'))).toBe(false);
});
