// What the figures were measured on, and the effective configuration of each service.
import { cpus, freemem, loadavg, totalmem, hostname } from 'node:os';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig, type EnvSchema } from '@hookline/config';
import { ROOT } from './children';

export function machineInfo(): Record<string, unknown> {
  const c = cpus();
  return {
    hostname: hostname(),
    cpus: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    memTotalMb: Math.round(totalmem() / 1048576),
    memFreeMb: Math.round(freemem() / 1048576),
    loadavg: loadavg().map((x) => Math.round(x * 100) / 100),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    // The load average at the start says whether anything else was running.
    note: process.env.BENCH_NOTE ?? 'load generator, receiver, PostgreSQL and Redis on the same machine as the services',
  };
}

const SECRET = /SECRET|KEY|PASSWORD|TOKEN/i;

function isEnvSchema(v: unknown): v is EnvSchema {
  return !!v && typeof v === 'object' && 'DATABASE_URL' in v && 'REDIS_URL' in v;
}

/** Each service's env schema applied to the env we give it: every value in force. */
export function effectiveServiceConfig(services: readonly string[], env: Record<string, string>): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const name of services) {
    const file = resolve(ROOT, `services/${name}/src/config.ts`);
    if (!existsSync(file)) continue;
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const mod = require(file) as Record<string, unknown>;
      const schema = Object.values(mod).find(isEnvSchema);
      if (!schema) continue;
      const values = loadConfig(schema, env) as Record<string, unknown>;
      out[name] = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, SECRET.test(k) ? '(set)' : v]));
    } catch (err) {
      out[name] = { error: (err as Error).message };
    }
  }
  return out;
}

export function redact(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, SECRET.test(k) ? '(set)' : v]));
}
