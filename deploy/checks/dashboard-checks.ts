// The Grafana dashboard against the metric contract in docs/deployment.md: a well-formed
// dashboard, only documented metrics, each used the way its type allows.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type MetricType = 'counter' | 'gauge' | 'histogram';

interface Panel {
  id?: number;
  type?: string;
  title?: string;
  gridPos?: { h: number; w: number; x: number; y: number };
  datasource?: { type?: string; uid?: string };
  targets?: { refId?: string; expr?: string }[];
}

export interface Dashboard {
  title?: string;
  uid?: string;
  schemaVersion?: number;
  panels?: Panel[];
  templating?: { list?: { name?: string; type?: string; query?: unknown }[] };
}

/** Rows of the metrics table: | `hookline_x` | counter | … */
export function documentedMetrics(markdown: string): Map<string, MetricType> {
  return new Map([...markdown.matchAll(/^\| `(hookline_[a-z0-9_]+)` \| (counter|gauge|histogram) \|/gm)].map((m) => [m[1]!, m[2] as MetricType]));
}

const RATE_FUNCTIONS = new Set(['rate', 'irate', 'increase']);

/** Each metric token of a PromQL expression with the functions enclosing it. */
export function metricUses(expr: string): { token: string; inside: string[] }[] {
  const uses: { token: string; inside: string[] }[] = [];
  const stack: string[] = [];
  const re = /([a-z_][a-z0-9_]*)?\s*\(|\)|\bhookline_[a-z0-9_]+/gi;
  for (const m of expr.matchAll(re)) {
    if (m[0] === ')') stack.pop();
    else if (m[0].endsWith('(')) stack.push(m[1] ?? '');
    else uses.push({ token: m[0], inside: [...stack] });
  }
  return uses;
}

function balanced(expr: string): boolean {
  const pairs: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  const stack: string[] = [];
  for (const ch of expr.replace(/"[^"]*"/g, '""')) {
    if ('([{'.includes(ch)) stack.push(ch);
    else if (ch in pairs && stack.pop() !== pairs[ch]) return false;
  }
  return stack.length === 0;
}

function exprProblems(expr: string, where: string, metrics: Map<string, MetricType>, used: Set<string>): string[] {
  const problems = balanced(expr) ? [] : [`${where}: unbalanced brackets in ${expr}`];
  for (const { token, inside } of metricUses(expr)) {
    const suffix = /_(bucket|sum|count)$/.exec(token);
    const base = metrics.has(token) ? token : suffix ? token.slice(0, suffix.index) : token;
    const type = metrics.get(base);
    const rated = inside.some((f) => RATE_FUNCTIONS.has(f));
    if (!type || (type === 'histogram' && !suffix)) problems.push(`${where}: ${token} is not a documented metric`);
    else if (type === 'gauge' && rated) problems.push(`${where}: ${token} is a gauge, rate() of it means nothing`);
    else if (type !== 'gauge' && !rated) problems.push(`${where}: ${token} is a ${type}; use rate()/increase()`);
    else if (suffix?.[1] === 'bucket' && !inside.includes('histogram_quantile')) problems.push(`${where}: ${token} outside histogram_quantile()`);
    used.add(base);
  }
  return problems;
}

function overlaps(a: NonNullable<Panel['gridPos']>, b: NonNullable<Panel['gridPos']>): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

export function dashboardProblems(d: Dashboard, metrics: Map<string, MetricType>): string[] {
  const problems: string[] = [];
  if (!d.title || !d.uid || typeof d.schemaVersion !== 'number') problems.push('dashboard: title, uid and schemaVersion are required');
  const vars = d.templating?.list ?? [];
  if (!vars.some((v) => v.name === 'datasource' && v.type === 'datasource' && v.query === 'prometheus')) problems.push('dashboard: needs a Prometheus `datasource` variable');
  const panels = d.panels ?? [];
  const ids = panels.map((p) => p.id);
  if (new Set(ids).size !== ids.length || ids.some((id) => typeof id !== 'number')) problems.push('dashboard: panel ids must be unique numbers');
  const used = new Set<string>();
  panels.forEach((p, i) => {
    const where = `panel "${p.title ?? i}"`;
    const g = p.gridPos;
    if (!g || g.x < 0 || g.w < 1 || g.x + g.w > 24) problems.push(`${where}: gridPos must lie within 24 columns`);
    else if (panels.slice(0, i).some((q) => q.gridPos && overlaps(q.gridPos, g))) problems.push(`${where}: overlaps another panel`);
    if (p.type === 'row') return;
    if (p.datasource?.uid !== '${datasource}') problems.push(`${where}: datasource must be the \${datasource} variable`);
    if (!p.targets?.length) problems.push(`${where}: no queries`);
    for (const t of p.targets ?? []) problems.push(...(t.expr ? exprProblems(t.expr, where, metrics, used) : [`${where}: a target without expr`]));
  });
  for (const name of metrics.keys()) if (!used.has(name)) problems.push(`dashboard: documented metric ${name} is on no panel`);
  return problems;
}

/** `hookline_*` names written as string literals in TypeScript source under `dirs`. */
export function metricNamesInCode(dirs: string[]): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory() && e.name !== 'node_modules' && e.name !== 'generated') walk(path);
      else if (e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/['"`](hookline_[a-z0-9_]+)['"`]/g)) found.set(m[1]!, path);
      }
    }
  };
  dirs.forEach(walk);
  return found;
}
