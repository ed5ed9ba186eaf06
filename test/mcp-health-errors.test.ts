// The MCP health and readiness tools say which dependency is down, never why: a driver's
// error text can name hosts, users and internals. The reason goes to the api's log.
import { health, readiness } from '../services/api/src/mcp/mcp-queries';

const SECRET_TEXT = 'connect ECONNREFUSED 10.1.2.3:5432 user=hookline_admin';

function failingDeps(warnings: unknown[][]): Parameters<typeof readiness>[0] {
  return {
    pool: { query: () => Promise.reject(new Error(SECRET_TEXT)) },
    redis: { ping: () => Promise.reject(new Error(SECRET_TEXT)) },
    producer: {},
    logger: { warn: (...args: unknown[]) => void warnings.push(args) },
    build: { version: '0.0.0', commit: 'test' },
  } as never;
}

describe('MCP health tools with dependencies down', () => {
  it('get_readiness reports each domain not ok, with no error text; the log has the reason', async () => {
    const warnings: unknown[][] = [];
    const r = await readiness(failingDeps(warnings), 'ten_x');
    expect(r).toEqual({ status: 'degraded', domains: { database: { ok: false }, redis: { ok: false }, queues: { ok: false }, deliveries: { ok: false }, evidence: { ok: false } } });
    expect(JSON.stringify(r)).not.toContain('ECONNREFUSED');
    expect(JSON.stringify(warnings)).toContain('ECONNREFUSED');
  });

  it('get_health likewise', async () => {
    const warnings: unknown[][] = [];
    const r = await health(failingDeps(warnings));
    expect(r).toMatchObject({ status: 'degraded', checks: { database: { ok: false }, redis: { ok: false } } });
    expect(JSON.stringify(r)).not.toContain('ECONNREFUSED');
    expect(warnings).toHaveLength(2);
  });
});
