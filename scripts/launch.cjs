#!/usr/bin/env node
// Runs an entry point from its prebuilt bundle, in this process (no tsx, no child):
//   node scripts/launch.cjs services/api/src/main.ts
// The manifests and the compose file name the TypeScript entry; the image's ENTRYPOINT is
// this launcher, and `pnpm build` (run in the image) made dist/<entry>.js.
// HOOKLINE_DIST_DIR points at another build folder (tests).
'use strict';
const { existsSync } = require('node:fs');
const { isAbsolute, join, relative, resolve } = require('node:path');

const root = resolve(__dirname, '..');
const entry = process.argv[2];
if (!entry || !/\.ts$/.test(entry)) {
  console.error('usage: node scripts/launch.cjs <entry.ts>   e.g. services/api/src/main.ts');
  process.exit(2);
}
const rel = isAbsolute(entry) ? relative(root, entry) : entry;
const dist = process.env.HOOKLINE_DIST_DIR ? resolve(process.env.HOOKLINE_DIST_DIR) : join(root, 'dist');
const bundle = join(dist, rel.replace(/\.ts$/, '.js'));
if (!existsSync(bundle)) {
  console.error(`${bundle} does not exist: run \`pnpm build\` first (it bundles every entry point into dist/)`);
  process.exit(2);
}
// Stack traces name the TypeScript sources (the bundles carry linked source maps).
process.setSourceMapsEnabled(true);
// The bundle runs as the main module (require.main === module holds), with the argv it
// would have had if node had been started on it.
process.argv.splice(1, 2, bundle);
require('node:module').runMain();
