// Hookline as a system under test: the stack, a tenant, and one ingester per fan-out whose
// flows point at the receiver (`/hookline/f{f}/d{i}`).
import { ApiClient, type HookSetup } from './api-client';
import type { RunningSut } from './baselines';
import { latencyBySecond, stageBreakdown } from './stage-breakdown';
import { SERVICES, startStack, type Stack } from './stack';

export interface HooklineSut extends RunningSut {
  stack: Stack;
  hooks: Record<number, HookSetup>;
}

export async function startHookline(o: { databaseUrl: string; redisUrl: string; env: Record<string, string>; cpuProfDir: string | null; shipped: boolean; receiverUrl: string; fanouts: number[]; destinationConfig: Record<string, unknown> }): Promise<HooklineSut> {
  const stack = await startStack({ label: 'bench', databaseUrl: o.databaseUrl, redisUrl: o.redisUrl, env: o.env, cpuProfDir: o.cpuProfDir ?? undefined, shipped: o.shipped });
  try {
    const api = await ApiClient.forNewTenant(stack.apiUrl, stack.pool);
    const hooks: Record<number, HookSetup> = {};
    for (const f of o.fanouts) {
      hooks[f] = await api.hook(`f${f}`, Array.from({ length: f }, (_, i) => `${o.receiverUrl}/hookline/f${f}/d${i + 1}`), o.destinationConfig);
    }
    return {
      name: 'hookline',
      stack,
      hooks,
      hookUrl: (f) => {
        const h = hooks[f];
        if (!h) throw new Error(`no hook for fan-out ${f}`);
        return h.hookUrl;
      },
      delivers: true,
      processes: [...SERVICES],
      pids: () => stack.pids() as Record<string, number>,
      stages: (from, to) => stageBreakdown(stack.pool, from, to),
      bySecond: (from, to) => latencyBySecond(stack.pool, from, to),
      async pauseDownstream() {
        await Promise.all([stack.kill('router'), stack.kill('deliverer')]);
        return async () => {
          await Promise.all([stack.start('router'), stack.start('deliverer')]);
        };
      },
      // The stack records a service's exit that neither kill nor close caused (bench/lib/stack.ts).
      unexpectedExits: () => (stack as { unexpectedExits?: readonly unknown[] }).unexpectedExits?.length ?? 0,
      close: () => stack.close(),
    };
  } catch (err) {
    await stack.close();
    throw err;
  }
}
