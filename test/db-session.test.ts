// Every pooled connection (raw pg and Prisma) runs in the configured schema with JIT off.
import { createPool, createPrisma } from '@hookline/db';
import { createTestDatabase, type TestDatabase } from '@hookline/testing';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase('session');
});

afterAll(async () => {
  await db?.drop();
});

test('raw pool and Prisma connections use the schema and have JIT off', async () => {
  const pool = createPool(db.url, 2);
  const prisma = createPrisma(db.url, 1);
  try {
    const { rows } = await pool.query<{ schema: string; jit: string }>(`SELECT current_schema() AS schema, current_setting('jit') AS jit`);
    expect(rows[0]).toEqual({ schema: db.schema, jit: 'off' });
    const viaPrisma = await prisma.$queryRawUnsafe<{ schema: string; jit: string }[]>(`SELECT current_schema() AS schema, current_setting('jit') AS jit`);
    expect(viaPrisma[0]).toEqual({ schema: db.schema, jit: 'off' });
  } finally {
    await pool.end();
    await prisma.$disconnect();
  }
});
