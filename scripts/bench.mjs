#!/usr/bin/env node
// Runs every benchmark: packages/*/bench/*.bench.ts and bench/*.bench.ts, one process each.
// Each prints a table for people and one JSON line per figure (docs/DESIGN.md, contract 4).
//   npm run bench                 all
//   npm run bench -- memory       only files whose path contains one of the arguments
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const filters = process.argv.slice(2);
const dirs = [
  ...readdirSync(join(root, 'packages')).map((p) => join(root, 'packages', p, 'bench')),
  join(root, 'bench'),
];
const files = dirs
  .filter((d) => existsSync(d))
  .flatMap((d) => readdirSync(d).filter((f) => f.endsWith('.bench.ts')).map((f) => relative(root, join(d, f))))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));

let failed = 0;
for (const file of files) {
  console.log(`\n## ${file}`);
  const r = spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', '--expose-gc', file], {
    stdio: 'inherit',
    cwd: root,
  });
  if (r.status !== 0) {
    failed++;
    console.error(`bench ${file} exited with ${r.status ?? r.signal}`);
  }
}
process.exit(failed === 0 ? 0 : 1);
