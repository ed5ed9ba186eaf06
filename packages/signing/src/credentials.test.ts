import { hashPassword, verifyPassword } from './credentials';

const b64 = (b: Buffer | number[]) => Buffer.from(b).toString('base64url');

describe('verifyPassword', () => {
  let stored: string;
  let salt: string;
  let hash: string;
  beforeAll(async () => {
    stored = await hashPassword('correct horse');
    [, , , , salt, hash] = stored.split('$') as string[] as [string, string, string, string, string, string];
  });

  it('accepts the password a hash was made from, and no other', async () => {
    expect(stored).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(await verifyPassword('correct horse', stored)).toBe(true);
    expect(await verifyPassword('wrong horse', stored)).toBe(false);
  });

  it('refuses every password when the stored hash is empty, short, long or not base64url', async () => {
    for (const h of ['!!!!', '', 'AA', b64(Buffer.from(hash, 'base64url').subarray(0, 16)), b64([...Buffer.from(hash, 'base64url'), 0]), `${hash}=`, `${hash.slice(0, -1)}*`]) {
      const bad = `scrypt$16384$8$1$${salt}$${h}`;
      for (const password of ['anything', '', 'correct horse']) expect([bad, password, await verifyPassword(password, bad)]).toEqual([bad, password, false]);
    }
  });

  it('refuses parameters out of bounds: N not a power of two or out of 2^10..2^20, r, p out of range or not plain integers, a salt not 16 bytes', async () => {
    const cases = [
      `scrypt$16383$8$1$${salt}$${hash}`,
      `scrypt$512$8$1$${salt}$${hash}`,
      `scrypt$2097152$8$1$${salt}$${hash}`,
      `scrypt$1.6384e4$8$1$${salt}$${hash}`,
      `scrypt$016384$8$1$${salt}$${hash}`,
      `scrypt$16384$0$1$${salt}$${hash}`,
      `scrypt$16384$33$1$${salt}$${hash}`,
      `scrypt$16384$8$0$${salt}$${hash}`,
      `scrypt$16384$8$17$${salt}$${hash}`,
      `scrypt$16384$8.5$1$${salt}$${hash}`,
      `scrypt$1048576$8$1$${salt}$${hash}`, // within the bounds, beyond scrypt's memory limit: false, not a throw
      `scrypt$16384$8$1$${b64(Buffer.from(salt, 'base64url').subarray(0, 8))}$${hash}`,
      `scrypt$16384$8$1$$${hash}`,
      `scrypt$16384$8$1$${salt}$${hash}$extra`,
      `bcrypt$16384$8$1$${salt}$${hash}`,
      '',
    ];
    for (const bad of cases) expect([bad, await verifyPassword('correct horse', bad)]).toEqual([bad, false]);
  });
});
