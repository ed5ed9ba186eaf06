// Certificates for tests that only need PEM text node's X509Certificate parses (the api's
// check of a destination's config.mtls.cert and ca): a test CA and a client certificate it
// signed, valid until 2126. No private key is kept: the key blocks below are fake bodies,
// enough for the checks that refuse any key block beside a certificate.

export const TEST_CLIENT_CERT = `-----BEGIN CERTIFICATE-----
MIIBNjCB3QIUUNyTYW+nfO+o2AYEBSE/92LFIX0wCgYIKoZIzj0EAwIwGzEZMBcG
A1UEAwwQSG9va2xpbmUgVGVzdCBDQTAgFw0yNjExMjIyMzQzMDJaGA8yMTI2MTAy
OTIzNDMwMlowHzEdMBsGA1UEAwwUaG9va2xpbmUtdGVzdC1jbGllbnQwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAASl0E+IHm6o+42wpMsv7LPCU0aysILpSShnxSNK
5xwASe0U74ECMlbkdAlJ5JPYusCFpiPqPZJg6O1IKH1rhah3MAoGCCqGSM49BAMC
A0gAMEUCIQDWS0GBM2LRkkFU0wAp5Gdaw1x5psTkuohOnBIA8Q4M7QIgGn+dmokz
RiTd4COsCpm0i43ZKzKX5JRWHogpi5ixRiQ=
-----END CERTIFICATE-----
`;

export const TEST_CA_CERT = `-----BEGIN CERTIFICATE-----
MIIBjDCCATOgAwIBAgIULsk/Zl4BWhhzxPMEPlospG/300AwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQSG9va2xpbmUgVGVzdCBDQTAgFw0yNjExMjIyMzQzMDFaGA8y
MTI2MTAyOTIzNDMwMVowGzEZMBcGA1UEAwwQSG9va2xpbmUgVGVzdCBDQTBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABFuIm9MJCt5e2NgAu3QTGVz1TyhYEj7ZIzWL
U7xRkom08O+uZyk37ZjENn+rjCVLNGEOXEtjSDBelqznLbJnKUmjUzBRMB0GA1Ud
DgQWBBTJPvKEmZJ7h2/j4zLUuJldWwZ92TAfBgNVHSMEGDAWgBTJPvKEmZJ7h2/j
4zLUuJldWwZ92TAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIHC4
wbIbwLmJQPRgl60kA2+YYoFe9/8ZMQkycWiCfV72AiAFIiZMBIDcF3V3iBCem8QR
TyeCWLc5JLE7uX6kVSrFUw==
-----END CERTIFICATE-----
`;

/** A private-key block (its body is no key; the label alone is what is refused), as a combined cert+key file carries it. */
export const fakeKeyBlock = (marker: string, label = 'PRIVATE KEY'): string => `-----BEGIN ${label}-----\nMIGHAgEAMBMGByqGSM49AgEG${marker}\n-----END ${label}-----\n`;
