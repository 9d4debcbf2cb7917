#!/usr/bin/env node
// The whole test suite: import lint, typecheck, then every *.test.ts under packages/, examples/ and
// scripts/ with the node test runner. Integration tests start their own real redis-server and s3rver
// (see @weft/testkit); this script installs redis-server with apt-get when it is missing and it may, and
// Debian's chromium the same way when a browser test (*.browser.*.test.ts) is among the files to run.
// Before the tests it builds the JavaScript of the packages `weft` loads (scripts/build-js.mjs: esbuild,
// no declarations, ~15 s) unless that build is already fresh, so every `weft`, worker and shuffle server
// the tests spawn starts from built code — the same sources, without compiling them again in each
// process (about half of the suite's time otherwise). WEFT_FROM_SOURCE=1 skips it: the tests' processes
// then run the sources through tsx.
//
//   npm test                      everything
//   npm test -- packages/engine   only test files whose path contains one of the arguments
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { availableParallelism } from 'node:os';
import { isBuildFresh, useBuiltCode, CLI_PACKAGES } from '@weft/cli/built-code';

const root = fileURLToPath(new URL('..', import.meta.url));
const filters = process.argv.slice(2);

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', cwd: root, ...options });
  return result.status ?? 1;
}

function hasCommand(name) {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

function ensureRedis() {
  if (hasCommand('redis-server')) return;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !hasCommand('apt-get')) {
    console.error('redis-server is missing and cannot be installed here: install it (apt-get install redis-server) and rerun');
    process.exit(1);
  }
  console.log('# installing redis-server with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (run('apt-get', ['install', '-y', '-q', 'redis-server'], { env }) !== 0) {
    run('apt-get', ['update', '-q'], { env });
    if (run('apt-get', ['install', '-y', '-q', 'redis-server'], { env }) !== 0) process.exit(1);
  }
}

function ensureChromium() {
  if (['chromium', 'chromium-browser', 'google-chrome'].some(hasCommand) || process.env.WEFT_CHROMIUM) return;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !hasCommand('apt-get')) {
    console.error('chromium is missing and cannot be installed here (the browser tests need it): install it (apt-get install chromium) or set WEFT_CHROMIUM, and rerun');
    process.exit(1);
  }
  console.log('# installing chromium with apt-get (for the UI browser tests)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (run('apt-get', ['install', '-y', '-q', 'chromium'], { env }) !== 0) {
    run('apt-get', ['update', '-q'], { env });
    if (run('apt-get', ['install', '-y', '-q', 'chromium'], { env }) !== 0) process.exit(1);
  }
}

function findTests(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) findTests(path, out);
    else if (name.endsWith('.test.ts')) out.push(relative(root, path));
  }
  return out;
}

const files = ['packages', 'examples', 'scripts']
  .flatMap((dir) => findTests(join(root, dir)))
  .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
  .sort();

if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}

if (filters.length === 0) {
  console.log('# lint: package boundaries and import cycles');
  if (run(process.execPath, ['scripts/lint-imports.mjs']) !== 0) process.exit(1);
  console.log('# typecheck');
  if (run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--noEmit']) !== 0) process.exit(1);
  console.log('# typecheck: the UI app (DOM)');
  if (run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'packages/ui/app/tsconfig.json', '--noEmit']) !== 0) process.exit(1);
}
/** The packages `weft` loads, and @weft/ui (imported by `weft ui` and `--ui`), built when not fresh. */
function ensureBuilt() {
  const cli = join(root, 'packages', 'cli');
  const ui = join(root, 'packages', 'ui');
  if (useBuiltCode(cli) && isBuildFresh(ui)) return;
  const dirs = [...CLI_PACKAGES.map((name) => join(root, 'packages', name.slice('@weft/'.length))), cli, ui];
  console.log('# build: the JavaScript of the packages weft loads (esbuild, no declarations), so spawned processes start from built code');
  if (run(process.execPath, ['scripts/build-js.mjs', ...dirs]) !== 0) process.exit(1);
}

if (process.env.WEFT_FROM_SOURCE !== '1') ensureBuilt();
ensureRedis();
if (files.some((file) => file.includes('.browser.'))) ensureChromium();

const concurrency = Math.max(2, availableParallelism());
console.log(`# ${files.length} test files, concurrency ${concurrency}`);
const status = run(process.execPath, [
  '--conditions=source',
  '--import',
  'tsx',
  '--test',
  `--test-concurrency=${concurrency}`,
  // the usual reporter, then what failed again at the very end (scripts/failure-summary-reporter.mjs)
  `--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`,
  '--test-reporter-destination=stdout',
  '--test-reporter=./scripts/failure-summary-reporter.mjs',
  '--test-reporter-destination=stdout',
  ...files,
]);
process.exit(status);
