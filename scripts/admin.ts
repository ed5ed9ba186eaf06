// `pnpm admin <command>`: operator commands. The one a new user starts with:
//   pnpm admin create-tenant --name "Acme" --plan pro --email owner@acme.test
// It creates a tenant, an owner user and an API key with every scope, and prints them as JSON
// (a generated password too). More users of a tenant, each with a role (owner, admin,
// member, viewer: the scopes of their sessions, packages/signing/src/roles.ts):
//   pnpm admin add-user --tenant ten_… --email ana@acme.test --role viewer
// A password of the operator's own comes from the environment (HOOKLINE_ADMIN_PASSWORD),
// never from argv (ps, shell history), and is not printed back.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadConfig, baseEnv } from '@hookline/config';
import { createPool, migrate, newId, parseDatabaseUrl, type Pool } from '@hookline/db';
import { API_SCOPES, USER_ROLES, hashPassword, isUserRole, newApiKey } from '@hookline/signing';

const PLANS = ['free', 'pro', 'business', 'enterprise'];

const USAGE = `usage:
  pnpm admin create-tenant --name <name> [--plan free|pro|business|enterprise] --email <email>
      (a password of your own: HOOKLINE_ADMIN_PASSWORD=…; otherwise one is generated and printed)
  pnpm admin add-user --tenant <tenant_id> --email <email> --role ${USER_ROLES.join('|')}
      (the password as for create-tenant)
  pnpm admin migrate
An email names one user across all tenants (login takes only the email).
Use \`pnpm -s admin …\` to get only the JSON on stdout (pnpm prints a banner first otherwise).`;

const NAME_MAX = 200;
// One address, no spaces, a dot in the domain; no `%` (an SQL pattern character: nobody's address).
const EMAIL = /^[^\s@%]{1,64}@[^\s@%]+\.[^\s@%]+$/;

/** Where this runs, without credentials: host, port, database and schema. */
function target(url: string): string {
  const { connectionString, schema } = parseDatabaseUrl(url);
  const u = new URL(connectionString);
  return `${u.hostname}:${u.port || '5432'}${u.pathname} (schema ${schema})`;
}

/** A usage error: printed with USAGE. */
class UsageError extends Error {}

/**
 * The options of a command, or null when it asked for help (USAGE printed). An unknown option
 * or a stray argument is a usage error, so a typo never runs the command with a default.
 */
function options<O extends Record<string, { type: 'string'; default?: string }>>(args: string[], spec: O): { [K in keyof O]?: string } | null {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return null;
  }
  try {
    return parseArgs({ args, options: spec, strict: true, allowPositionals: false }).values as { [K in keyof O]?: string };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

// Progress goes to stderr: stdout carries only the result (create-tenant's JSON).
const progress = (m: string): void => void process.stderr.write(`${m}\n`);

interface UserInput {
  email: string;
  /** The operator's own (HOOKLINE_ADMIN_PASSWORD), or undefined: one is generated. */
  own: string | undefined;
}

/** Validates the email and password options both commands take; adds what is wrong to `problems`. */
function userInput(values: { email?: string | undefined; password?: string | undefined }, problems: string[]): UserInput {
  const email = values.email?.trim().toLowerCase() ?? '';
  const own = process.env['HOOKLINE_ADMIN_PASSWORD'];
  if (!EMAIL.test(email)) problems.push('--email must be an email address');
  if (values.password !== undefined) problems.push('--password is not taken on the command line (ps and shell history keep it): set HOOKLINE_ADMIN_PASSWORD');
  if (own !== undefined && own.length < 8) problems.push('HOOKLINE_ADMIN_PASSWORD must be at least 8 characters');
  return { email, own };
}

type Client = Pick<Pool, 'query'>;

/**
 * Migrates, then runs `write` in one transaction (the user's email checked first: the unique
 * index is on the email as stored; login compares any case, so a user whose email differs
 * only in case would make both ambiguous, neither could log in) and prints `result` as JSON.
 */
async function withUserWrite(user: UserInput, write: (client: Client, passwordHash: string) => Promise<Record<string, unknown>>): Promise<void> {
  const config = loadConfig({ DATABASE_URL: baseEnv.DATABASE_URL });
  progress(`database: ${target(config.DATABASE_URL)}`);
  await migrate(config.DATABASE_URL, undefined, progress);
  const pool = createPool(config.DATABASE_URL, 1);
  const password = user.own ?? randomBytes(12).toString('base64url');
  const client = await pool.connect();
  let out: Record<string, unknown>;
  try {
    await client.query('BEGIN');
    if ((await client.query('SELECT 1 FROM users WHERE lower(email) = $1', [user.email])).rowCount) throw Object.assign(new Error('duplicate'), { code: '23505' });
    out = await write(client, await hashPassword(password));
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    if ((err as { code?: string }).code === '23505') throw new Error(`a user with email ${user.email} already exists`);
    throw err;
  } finally {
    client.release();
    await pool.end();
  }
  // A generated password is shown once; the operator's own is not printed back.
  if (user.own === undefined) out = { ...out, user: { ...(out['user'] as object), password } };
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

async function createTenant(args: string[]): Promise<void> {
  const values = options(args, { name: { type: 'string' }, plan: { type: 'string', default: 'free' }, email: { type: 'string' }, password: { type: 'string' } });
  if (!values) return;
  const problems: string[] = [];
  const name = values.name?.trim() ?? '';
  if (!name) problems.push('--name is required');
  if (name.length > NAME_MAX) problems.push(`--name must be at most ${NAME_MAX} characters`);
  const user = userInput(values, problems);
  if (!PLANS.includes(values.plan ?? '')) problems.push(`--plan must be one of ${PLANS.join(', ')}`);
  if (problems.length) throw new UsageError(problems.join('; '));
  const key = newApiKey();
  const ids = { tenant: newId('ten'), user: newId('usr'), key: newId('key') };
  await withUserWrite(user, async (client, passwordHash) => {
    await client.query('INSERT INTO tenants (id, name, plan, updated_at) VALUES ($1, $2, $3, now())', [ids.tenant, name, values.plan]);
    await client.query(`INSERT INTO users (id, tenant_id, email, password_hash, role) VALUES ($1, $2, $3, $4, 'owner')`, [ids.user, ids.tenant, user.email, passwordHash]);
    await client.query(`INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash, scopes) VALUES ($1, $2, 'bootstrap', $3, $4, $5)`, [ids.key, ids.tenant, key.prefix, key.hash, [...API_SCOPES]]);
    await client.query(`INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome) VALUES ($1, $2, 'admin-cli', 'tenant.create', $2, $3, 'success')`, [newId('aud'), ids.tenant, JSON.stringify({ name, plan: values.plan, email: user.email })]);
    return {
      tenant_id: ids.tenant,
      name,
      plan: values.plan,
      user: { id: ids.user, email: user.email, role: 'owner' },
      api_key: { id: ids.key, key: key.key, scopes: [...API_SCOPES] },
      note: 'The API key and password are shown once; store them now.',
    };
  });
}

async function addUser(args: string[]): Promise<void> {
  const values = options(args, { tenant: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' }, password: { type: 'string' } });
  if (!values) return;
  const problems: string[] = [];
  const tenant = values.tenant?.trim() ?? '';
  if (!/^ten_[\w-]{1,100}$/.test(tenant)) problems.push('--tenant must be a tenant id (ten_…)');
  const user = userInput(values, problems);
  const role = values.role ?? '';
  if (!isUserRole(role)) problems.push(`--role must be one of ${USER_ROLES.join(', ')}`);
  if (problems.length) throw new UsageError(problems.join('; '));
  const id = newId('usr');
  await withUserWrite(user, async (client, passwordHash) => {
    if (!(await client.query('SELECT 1 FROM tenants WHERE id = $1 FOR SHARE', [tenant])).rowCount) throw new Error(`no tenant ${tenant}`);
    await client.query('INSERT INTO users (id, tenant_id, email, password_hash, role) VALUES ($1, $2, $3, $4, $5)', [id, tenant, user.email, passwordHash, role]);
    await client.query(`INSERT INTO audit_logs (id, tenant_id, actor, action, resource_id, params, outcome) VALUES ($1, $2, 'admin-cli', 'user.create', $3, $4, 'success')`, [newId('aud'), tenant, id, JSON.stringify({ email: user.email, role })]);
    return { tenant_id: tenant, user: { id, email: user.email, role }, note: 'The password is shown once; store it now.' };
  });
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'create-tenant') return createTenant(rest);
  if (command === 'add-user') return addUser(rest);
  if (command === 'migrate') {
    if (!options(rest, {})) return;
    const config = loadConfig({ DATABASE_URL: baseEnv.DATABASE_URL });
    progress(`database: ${target(config.DATABASE_URL)}`);
    const applied = await migrate(config.DATABASE_URL, undefined, progress);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    return;
  }
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    if (command === undefined) process.exitCode = 1;
    return;
  }
  throw new UsageError(`unknown command "${command}"`);
}

main().catch((err: Error) => {
  console.error(`admin: ${err.message}${err instanceof UsageError ? `\n${USAGE}` : ''}`);
  process.exit(1);
});
