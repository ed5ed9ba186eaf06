import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client';
import { parseDatabaseUrl, sessionOptions } from './pool';

export function createPrisma(url: string, max = 5): PrismaClient {
  const { connectionString, schema } = parseDatabaseUrl(url);
  const adapter = new PrismaPg({ connectionString, max, options: sessionOptions(schema) }, { schema });
  return new PrismaClient({ adapter });
}
