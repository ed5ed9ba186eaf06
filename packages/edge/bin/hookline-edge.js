#!/usr/bin/env node
// The `hookline-edge` command from a source checkout: runs the TypeScript entry through tsx.
// The container image runs the esbuild bundle instead (dist/hookline-edge.cjs).
require('tsx/cjs');
require('../src/main.ts');
