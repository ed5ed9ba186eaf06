// `--runtime bundle`: each service bundled by esbuild into one CommonJS file and run by
// plain node, to measure what the tsx loader costs (its module-hooks thread and on-the-fly
// transforms). npm packages stay external, resolved to absolute paths at build time.
import { builtinModules } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { build } from 'esbuild';
import { onExitSync, ROOT } from './children';

export async function bundleServices(names: readonly string[]): Promise<Record<string, string>> {
  const dir = mkdtempSync(join(tmpdir(), 'hookline-bench-build-'));
  onExitSync(() => rmSync(dir, { recursive: true, force: true }));
  const out: Record<string, string> = {};
  for (const name of names) {
    const outfile = join(dir, `${name}.js`);
    await build({
      entryPoints: [resolve(ROOT, `services/${name}/src/main.ts`)],
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      outfile,
      logLevel: 'warning',
      plugins: [
        {
          name: 'npm-external',
          setup(b) {
            b.onResolve({ filter: /^[^./]/ }, (a) => {
              if (a.path.startsWith('@hookline/')) return undefined;
              if (a.path.startsWith('node:') || builtinModules.includes(a.path)) return { external: true };
              return { path: require.resolve(a.path, { paths: [a.resolveDir] }), external: true };
            });
            // Paths computed from __dirname (migrations, package.json) keep pointing into the checkout.
            b.onLoad({ filter: /\.ts$/ }, (a) => ({
              contents: readFileSync(a.path, 'utf8').replace(/\b__dirname\b/g, JSON.stringify(dirname(a.path))).replace(/\b__filename\b/g, JSON.stringify(a.path)),
              loader: 'ts',
            }));
          },
        },
      ],
    });
    out[name] = outfile;
  }
  return out;
}
