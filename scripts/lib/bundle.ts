// esbuild bundles of Hookline's entry points: each one a single CommonJS file run by plain
// node, without tsx (no module-hooks thread, no on-the-fly transforms: ~40 MB less RSS per
// process, measured in the benchmark). npm packages stay external, resolved to absolute
// paths at build time, so a bundle runs only from the checkout or image that built it.
import { builtinModules } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { build } from 'esbuild';
import { REPO_ROOT } from './entries';

export { bundlePath, ENTRIES, REPO_ROOT } from './entries';

/** Bundles one entry (a path relative to the repository) into `outfile`, with a linked source map. */
export async function bundleEntry(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [resolve(REPO_ROOT, entry)],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    outfile,
    sourcemap: 'linked',
    keepNames: true,
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
}
