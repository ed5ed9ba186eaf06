// Checks of the operator documentation without running anything: relative links and their
// #anchors resolve, every `pnpm <script>` it shows exists, and every `pnpm bench` /
// `pnpm chaos` command line it shows is accepted by the harness's own flag parser.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { REPO_ROOT } from './kustomize-lite';

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const withoutFences = (markdown: string): string => markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');

/** The anchors a markdown file offers (a repeated heading gets -1, -2, …). */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of withoutFences(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const base = headingAnchor(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative links of `file` (repository path) whose file or #anchor does not exist. */
export function linkProblems(file: string): string[] {
  const path = resolve(REPO_ROOT, file);
  const text = readFileSync(path, 'utf8');
  const problems: string[] = [];
  for (const m of withoutFences(text).matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
    const link = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
    const [target, anchor] = link.split('#') as [string, string | undefined];
    const to = target ? resolve(dirname(path), target) : path;
    if (!existsSync(to)) {
      problems.push(`${file}: link ${link}: ${relative(REPO_ROOT, to)} does not exist`);
      continue;
    }
    if (anchor && statSync(to).isFile() && to.endsWith('.md') && !anchorsOf(readFileSync(to, 'utf8')).has(anchor)) {
      problems.push(`${file}: link ${link}: ${relative(REPO_ROOT, to)} has no heading #${anchor}`);
    }
  }
  return problems;
}

/** Code as the reader sees it: fenced blocks (continuation lines joined) and inline code spans. */
export function codeOf(markdown: string): string[] {
  const out: string[] = [];
  for (const m of markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```$/gm)) out.push(...m[1]!.replace(/\\\n\s*/g, ' ').split('\n'));
  for (const m of withoutFences(markdown).matchAll(/`([^`]+)`/g)) out.push(m[1]!.replace(/\s*\n\s*/g, ' '));
  return out;
}

/** pnpm's own commands that the docs may show. */
const PNPM_BUILTINS = new Set(['install', 'exec', 'run', 'add', 'dlx']);

/** `pnpm <name>` in the code of the docs where package.json has no script `<name>`. */
export function pnpmScriptProblems(file: string, code: string[], scripts: Record<string, string>): string[] {
  const problems: string[] = [];
  for (const line of code) {
    // A shell comment after the command is prose.
    for (const m of line.split(/\s#\s/)[0]!.matchAll(/\bpnpm\s+(?:-s\s+)?([a-z][\w:<>|-]*)/g)) {
      for (const name of m[1]!.split('|')) {
        if (PNPM_BUILTINS.has(name)) continue;
        // `pnpm start:<service>`: some script of that family.
        const known = name.includes('<') ? Object.keys(scripts).some((s) => s.startsWith(name.slice(0, name.indexOf('<')))) : name in scripts;
        if (!known) problems.push(`${file}: \`pnpm ${name}\` is not a script of package.json`);
      }
    }
  }
  return problems;
}

/** The arguments after `pnpm <harness>` on a line of code, or null; up to a comment or `&&`. */
export function harnessArgs(line: string, harness: string): string[] | null {
  const m = new RegExp(`\\bpnpm\\s+${harness}\\b(.*)$`).exec(line);
  if (!m) return null;
  const rest = m[1]!.split(/\s(?:#|&&)\s?/)[0]!;
  return rest.split(/\s+/).filter(Boolean);
}

/** Command lines of `pnpm <harness>` in the docs that its flag parser refuses. */
export function harnessCommandProblems(file: string, code: string[], harness: string, parse: (argv: string[]) => unknown): string[] {
  const problems: string[] = [];
  for (const line of code) {
    const args = harnessArgs(line, harness);
    if (!args || args.includes('--help')) continue;
    try {
      parse(args);
    } catch (err) {
      problems.push(`${file}: \`pnpm ${harness} ${args.join(' ')}\`: ${(err as Error).message}`);
    }
  }
  return problems;
}
