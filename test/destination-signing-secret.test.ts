// A destination signing secret given to the API must be a Standard Webhooks secret (`whsec_`
// + strict base64 of 24..64 bytes): signing decodes it leniently, so '!!!!…' became an empty
// HMAC key (anyone could forge) and 'my-shared-secret-2024!' 15 bytes the standardwebhooks
// library refuses. Refused with a 400 naming signing_secret, nothing written, on every write
// path; secrets stored before the check keep signing.
import { createSecretBox, verifyServiceSignature, whsecKey } from '@hookline/signing';
import { signatureHeaders } from '@hookline/delivery';
import { startApi, type ApiHarness, type ApiTenant as Tenant } from './api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApi('dstsecret');
});
afterAll(async () => {
  await h.close();
});

const BAD = ['!!!!!!!!!!!!!!!!', 'my-shared-secret-2024!', `whsec_${Buffer.alloc(16, 1).toString('base64')}`, `whsec_${Buffer.alloc(24, 0xfb).toString('base64url')}`];
const VALID = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const BARE = Buffer.alloc(24, 5).toString('base64');
const LEGACY = 'my-shared-secret-2024!';

const box = () => createSecretBox(h.api.context.config.SECRETS_KEY);
const secretsOf = async (id: string): Promise<string[]> => (await h.db.pool.query('SELECT secrets FROM destinations WHERE id = $1', [id])).rows[0].secrets;
const countNamed = async (t: Tenant, name: string): Promise<number> =>
  Number((await h.db.pool.query('SELECT count(*) AS n FROM destinations WHERE tenant_id = $1 AND name = $2', [t.tenantId, name])).rows[0].n);

function expectRefused(res: { status: number; body: any }, secret: string): void {
  expect({ secret, status: res.status, type: res.body.type, fields: res.body.errors?.map((e: { field: string }) => e.field) }).toEqual({
    secret,
    status: 400,
    type: 'https://hookline.dev/errors/validation-error',
    fields: ['signing_secret'],
  });
  expect(res.body.errors[0].message).toMatch(/whsec_.*base64.*24 to 64/);
}

async function create(t: Tenant, body: Record<string, unknown>, path = `/v1/tenants/${t.tenantId}/destinations`) {
  return h.call('POST', path, { key: t.apiKey, body: { url: 'https://example.test/hook', ...body } });
}

describe('a destination signing secret given to the API', () => {
  it('on create (tenant and flat routes): refused unless whsec_ or bare strict base64 of 24..64 bytes, naming signing_secret, nothing written', async () => {
    const t = await h.tenant();
    for (const secret of BAD) {
      expectRefused(await create(t, { name: 'bad', signing_secret: secret }), secret);
      expectRefused(await h.call('POST', '/v1/targets', { key: t.apiKey, body: { name: 'bad', url: 'https://example.test/hook', signing_secret: secret } }), secret);
    }
    expect(await countNamed(t, 'bad')).toBe(0);
    const made = await create(t, { name: 'given', signing_secret: VALID });
    expect(made.status).toBe(201);
    expect(box().open((await secretsOf(made.body.id))[0]!)).toBe(VALID);
    expect((await create(t, { name: 'bare', signing_secret: BARE }, '/v1/targets')).status).toBe(201);
  });

  it('on PATCH: a bad one refuses the whole PATCH and the stored secrets stay; a valid one becomes current, the previous kept', async () => {
    const t = await h.tenant();
    const made = await create(t, { name: 'patched', signing_secret: VALID });
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    const before = await secretsOf(made.body.id);
    for (const secret of BAD) expectRefused(await h.call('PATCH', path, { key: t.apiKey, body: { signing_secret: secret, name: 'renamed' } }), secret);
    expect(await secretsOf(made.body.id)).toEqual(before);
    expect(await countNamed(t, 'renamed')).toBe(0);
    const patched = await h.call('PATCH', path, { key: t.apiKey, body: { signing_secret: BARE } });
    expect([patched.status, patched.body.signing_secrets_count]).toEqual([200, 2]);
    expect((await secretsOf(made.body.id)).map((s) => box().open(s))).toEqual([BARE, VALID]);
  });

  it('is checked on write only: a stored secret from before the check keeps signing through other PATCHes and a rotation', async () => {
    const t = await h.tenant();
    const made = await create(t, { name: 'legacy' });
    const path = `/v1/tenants/${t.tenantId}/destinations/${made.body.id}`;
    await h.db.pool.query('UPDATE destinations SET secrets = $1 WHERE id = $2', [[box().seal(LEGACY)], made.body.id]);
    expect((await h.call('PATCH', path, { key: t.apiKey, body: { name: 'legacy-2' } })).status).toBe(200);
    const rotated = await h.call('PATCH', path, { key: t.apiKey, body: { rotate_signing_secret: true } });
    expect(rotated.status).toBe(200);
    const secrets = (await secretsOf(made.body.id)).map((s) => box().open(s));
    expect(secrets).toEqual([rotated.body.signing_secret, LEGACY]);
    // Both still sign a delivery: X-Service-Signature verifies with either (one v1 each).
    const body = Buffer.from('{"x":1}');
    const headers = signatureHeaders(secrets, 'dlv_legacy', body);
    for (const s of secrets) expect(verifyServiceSignature([whsecKey(s)], body, headers['x-service-signature'], headers['x-service-timestamp'], 300)).toEqual({ ok: true });
  });
});
