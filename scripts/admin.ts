// `pnpm admin <command>`: operator commands. The one a new user starts with:
//   pnpm admin create-tenant --name "Acme" --plan pro --email owner@acme.test [--password …]
// It creates a tenant, an owner user and an API key with every scope, and prints them as JSON.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadConfig, baseEnv } from '@hookline/config';
import { createPool, migrate, newId } from '@hookline/db';
import { API_SCOPES, hashPassword, newApiKey } from '@hookline/signing';

const PLANS = ['free', 'pro', 'business', 'enterprise'];

const USAGE = `usage:
  pnpm admin create-tenant --name <name> [--plan free|pro|business|enterprise] --email <email> [--password <password>]
  pnpm admin migrate`;

// Progress goes to stderr: stdout carries only the result (create-tenant's JSON).
const progress = (m: string): void => void process.stderr.write(`${m}\n`);

async function createTenant(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { name: { type: 'string' }, plan: { type: 'string', default: 'free' }, email: { type: 'string' }, password: { type: 'string' } } });
  const problems: string[] = [];
  if (!values.name?.trim()) problems.push('--name is required');
  if (!values.email || !/^[^@\s]+@[^@\s]+$/.test(values.email)) problems.push('--email must be an email address');
  if (!PLANS.includes(values.plan ?? '')) problems.push(`--plan must be one of ${PLANS.join(', ')}`);
  if (values.password !== undefined && values.password.length < 8) problems.push('--password must be at least 8 characters');
  if (problems.length) throw new Error(`${problems.join('; ')}\n${USAGE}`);
  const config = loadConfig({ DATABASE_URL: baseEnv.DATABASE_URL });
  await migrate(config.DATABASE_URL, undefined, progress);
  const pool = createPool(config.DATABASE_URL, 1);
  const password = values.password ?? randomBytes(12).toString('base64url');
  const key = newApiKey();
  const ids = { tenant: newId('ten'), user: newId('usr'), key: newId('key') };
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('INSERT INTO tenants (id, name, plan, updated_at) VALUES ($1, $2, $3, now())', [ids.tenant, values.name, values.plan]);
    await client.query('INSERT INTO users (id, tenant_id, email, password_hash) VALUES ($1, $2, $3, $4)', [ids.user, ids.tenant, values.email!.toLowerCase(), await hashPassword(password)]);
    await client.query(`INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, scopes) VALUES ($1, $2, 'bootstrap', $3, $4, $5)`, [ids.key, ids.tenant, key.prefix, key.hash, [...API_SCOPES]]);
    await client.query(`INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome) VALUES ($1, $2, 'admin-cli', 'tenant.create', $2, $3, 'success')`, [newId('aud'), ids.tenant, JSON.stringify({ name: values.name, plan: values.plan, email: values.email })]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    if ((err as { code?: string }).code === '23505') throw new Error(`a user with email ${values.email} already exists`);
    throw err;
  } finally {
    client.release();
    await pool.end();
  }
  const out = {
    tenant_id: ids.tenant,
    name: values.name,
    plan: values.plan,
    user: { id: ids.user, email: values.email!.toLowerCase(), password },
    api_key: { id: ids.key, key: key.key, scopes: [...API_SCOPES] },
    note: 'The API key and password are shown once; store them now.',
  };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'create-tenant') return createTenant(rest);
  if (command === 'migrate') {
    const config = loadConfig({ DATABASE_URL: baseEnv.DATABASE_URL });
    const applied = await migrate(config.DATABASE_URL, undefined, progress);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    return;
  }
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    if (command === undefined) process.exitCode = 1;
    return;
  }
  throw new Error(`unknown command "${command}"\n${USAGE}`);
}

main().catch((err: Error) => {
  console.error(`admin: ${err.message}`);
  process.exit(1);
});
