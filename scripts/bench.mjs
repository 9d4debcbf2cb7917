#!/usr/bin/env node
// Runs every benchmark: packages/*/bench/*.bench.ts and bench/*.bench.ts, one process each.
// Each prints a table for people and one JSON line per figure (docs/DESIGN.md, contract 4).
//   npm run bench                 all
//   npm run bench -- memory       only files whose path contains one of the arguments
// A bench whose first lines say `// weft-bench: built code` measures the engine as `weft` runs it: on the
// built packages (dist/) when their build is fresh (useBuiltCode, as bin/weft.js decides; WEFT_FROM_SOURCE=1
// keeps the sources), its own TypeScript still through tsx. Every other bench imports the sources.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI_PACKAGES, useBuiltCode } from '@weft/cli/built-code';

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

const BUILT_CODE_MARK = '// weft-bench: built code';
const builtCodeFresh = process.env.WEFT_FROM_SOURCE !== '1' && useBuiltCode(join(root, 'packages', 'cli'));

/**
 * Whether `file` runs on the built packages: it asks to (BUILT_CODE_MARK in its first 2 KB) and their build
 * is fresh. Only the packages `weft` loads are checked (CLI_PACKAGES): a marked bench that imports another
 * workspace package (@weft/testkit has no build that `npm test` keeps fresh) runs from source.
 */
function onBuiltCode(file) {
  if (!builtCodeFresh) return false;
  const text = readFileSync(join(root, file), 'utf8');
  if (!text.slice(0, 2048).includes(BUILT_CODE_MARK)) return false;
  const others = [...text.matchAll(/from '(@weft\/[a-z-]+)/g)].map((m) => m[1]).filter((name) => !CLI_PACKAGES.includes(name));
  if (others.length === 0) return true;
  console.log(`(${file} imports ${[...new Set(others)].join(', ')}, which weft does not load: it runs from source)`);
  return false;
}

let failed = 0;
for (const file of files) {
  console.log(`\n## ${file}`);
  const conditions = onBuiltCode(file) ? [] : ['--conditions=source'];
  const r = spawnSync(process.execPath, [...conditions, '--import', 'tsx', '--expose-gc', file], {
    stdio: 'inherit',
    cwd: root,
  });
  if (r.status !== 0) {
    failed++;
    console.error(`bench ${file} exited with ${r.status ?? r.signal}`);
  }
}
process.exit(failed === 0 ? 0 : 1);
