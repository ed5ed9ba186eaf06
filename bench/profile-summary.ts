// `tsx bench/profile-summary.ts DIR|FILE…`: where the time goes in V8 CPU profiles written by
// `pnpm bench --cpu-prof DIR`: self time by package/file and the hottest functions.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

function where(url: string): string {
  if (!url) return '(native/V8)';
  const pkg = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url) ?? /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `npm:${pkg[1]}`;
  if (url.startsWith('node:')) return url;
  const ours = /\/work\/main\/(.*)$/.exec(url.replace('file://', ''));
  return ours ? ours[1]! : url;
}

export function summarize(file: string, top = 15): string {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0) || 1;
  const byWhere = new Map<string, number>();
  const byFn = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const w = n.callFrame.functionName === '(idle)' ? '(idle)' : n.callFrame.functionName === '(garbage collector)' ? '(gc)' : where(n.callFrame.url);
    byWhere.set(w, (byWhere.get(w) ?? 0) + us);
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + us);
  }
  const idle = byWhere.get('(idle)') ?? 0;
  const busy = total - idle;
  const pct = (us: number): string => `${((us / busy) * 100).toFixed(1).padStart(5)} %`;
  const lines = [`${file}: ${(total / 1e6).toFixed(1)} s profiled, ${(busy / 1e6).toFixed(1)} s busy (${((busy / total) * 100).toFixed(0)} %)`, '  self time by place (share of busy time):'];
  for (const [w, us] of [...byWhere].filter(([w]) => w !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`    ${pct(us)}  ${w}`);
  // Inclusive time of this project's functions (services/, packages/): which of our
  // calls the busy time sits under, counted once per stack.
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inclusive = new Map<string, number>();
  for (const [id, us] of self) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      const w = where(n.callFrame.url);
      if (!/^(services|packages)\//.test(w)) continue;
      const key = `${n.callFrame.functionName || '(anonymous)'} ${w}:${n.callFrame.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  }
  lines.push('  our functions, inclusive:');
  for (const [f, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`    ${pct(us)}  ${f}`);
  lines.push('  hottest functions:');
  for (const [f, us] of [...byFn].filter(([f]) => !f.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`    ${pct(us)}  ${f}`);
  return lines.join('\n');
}

if (require.main === module) {
  const walk = (a: string): string[] => (statSync(a).isDirectory() ? readdirSync(a).flatMap((f) => walk(join(a, f))) : a.endsWith('.cpuprofile') ? [a] : []);
  const files = process.argv.slice(2).flatMap(walk);
  if (!files.length) {
    console.error('usage: tsx bench/profile-summary.ts DIR|FILE.cpuprofile…');
    process.exit(2);
  }
  for (const f of files.sort()) console.log(`${summarize(f)}\n`);
}
