#!/usr/bin/env node
// `npm start`: the main job on the embedded default. Runs a TypeScript entry point from source with tsx.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const result = spawnSync(
  process.execPath,
  ['--conditions=source', '--import', 'tsx', 'examples/memory-shuffle-demo.ts', ...process.argv.slice(2)],
  { stdio: 'inherit', cwd: root },
);
process.exit(result.status ?? 1);
