// Offline checks of the operator documentation: links resolve, the pnpm scripts it shows
// exist, and the `pnpm bench` / `pnpm chaos` command lines it shows pass the harnesses'
// own flag parsers (no harness is run).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseBenchOptions } from '../bench/lib/bench-options';
import { parseChaosOptions } from '../bench/chaos/chaos-options';
import { anchorsOf, codeOf, harnessArgs, harnessCommandProblems, headingAnchor, linkProblems, pnpmScriptProblems } from '../deploy/checks/docs-checks';
import { REPO_ROOT } from '../deploy/checks/kustomize-lite';

const DOCS = ['README.md', 'docs/architecture.md', 'docs/deployment.md', 'docs/measurements.md', 'bench/README.md'];
const read = (file: string): string => readFileSync(resolve(REPO_ROOT, file), 'utf8');
const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;

test.each(DOCS)('%s: relative links and #anchors resolve', (file) => {
  expect(linkProblems(file)).toEqual([]);
});

test.each(DOCS)('%s: every `pnpm <script>` shown exists', (file) => {
  expect(pnpmScriptProblems(file, codeOf(read(file)), scripts)).toEqual([]);
});

test.each(DOCS)('%s: every `pnpm bench` and `pnpm chaos` command line shown is accepted by its flag parser', (file) => {
  const code = codeOf(read(file));
  expect([...harnessCommandProblems(file, code, 'bench', parseBenchOptions), ...harnessCommandProblems(file, code, 'chaos', parseChaosOptions)]).toEqual([]);
});

test('the docs show the harnesses with flags (so the test above has something to check)', () => {
  const lines = DOCS.flatMap((f) => codeOf(read(f)));
  expect(lines.filter((l) => (harnessArgs(l, 'bench') ?? []).length > 0).length).toBeGreaterThan(5);
  expect(lines.filter((l) => (harnessArgs(l, 'chaos') ?? []).length > 0).length).toBeGreaterThan(1);
});

describe('the checks find broken docs', () => {
  test('anchors follow GitHub: punctuation dropped, repeated headings numbered', () => {
    expect(headingAnchor('Local: `pnpm start`'.replace(/`/g, ''))).toBe('local-pnpm-start');
    expect([...anchorsOf('# A (one host)\n## Notes\n```\n# not a heading\n```\n## Notes\n')]).toEqual(['a-one-host', 'notes', 'notes-1']);
  });

  test('a flag the parser does not know, a phase that does not exist, a script that does not exist', () => {
    const code = codeOf('Run `pnpm bench --phase latency` or\n```\npnpm bench --phases latancy   # typo\npnpm chaos --events 5000 --rates 200\npnpm benchmark   # runs pnpm and more\n```\n');
    expect(harnessCommandProblems('x.md', code, 'bench', parseBenchOptions)).toEqual([
      expect.stringMatching(/^x\.md: `pnpm bench --phases latancy`: unknown phase/),
      expect.stringMatching(/^x\.md: `pnpm bench --phase latency`: .*Unknown option '--phase'/),
    ]);
    expect(harnessCommandProblems('x.md', code, 'chaos', parseChaosOptions)).toEqual([expect.stringMatching(/Unknown option '--rates'/)]);
    expect(pnpmScriptProblems('x.md', code, scripts)).toEqual(['x.md: `pnpm benchmark` is not a script of package.json']);
  });
});
