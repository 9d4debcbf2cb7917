// `weft` starts from the built code (dist/, plain node) only when every package it loads is built and
// not older than its sources; otherwise from the TypeScript sources through tsx. What ran is observable in
// `weft run --json` ("cli": which code, whether tsx was preloaded, how the TypeScript job module was
// loaded — through that tsx, or bundled by esbuild into plain JavaScript). scripts/test.mjs builds the
// checkout's JavaScript before the tests, but its dist/ must not change under the other tests running at
// the same time (a source dated after the build would switch their `weft` to the sources), so
// the built and stale cases run a copy of the CLI's packages built under a temporary directory
// (helpers/built-tree.ts: tsup without declarations, a few seconds).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, realpath, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createTempDir, type TempDir } from '@weft/testkit';
import { corpusLine } from '../../../examples/lib/corpus.js';
import { countWordsByScanning, parseCounts } from '../../../examples/test/support/word-reference.js';
// @ts-expect-error plain JavaScript next to the shim, no declarations
import { isBuildFresh, newestSourceMtime, useBuiltCode } from '../bin/built-code.js';
import { buildTree, type BuiltTree } from './helpers/built-tree.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const checkoutBin = join(root, 'packages', 'cli', 'bin', 'weft.js');
const checkoutJob = join(root, 'examples', 'word-count.ts');
const recorder = fileURLToPath(new URL('./helpers/record-loads.mjs', import.meta.url));
const LINES = 300;

/** `weft run` of word count (LINES generated lines, output out.tsv in `cwd`) by the shim `bin`; its --json summary. */
function weftRunJson(bin: string, job: string, cwd: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const args = [bin, 'run', job, '--parallelism', '2', '--workers', '2', '--json', '--', '--lines', String(LINES), '--output', 'out.tsv'];
    execFile(process.execPath, args, { cwd, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as Record<string, unknown>);
    });
  });
}

/** Asserts that out.tsv in `cwd` holds the exact word count of the generated corpus. */
async function assertCounts(cwd: string): Promise<void> {
  const text = Array.from({ length: LINES }, (_, i) => corpusLine(i)).join('\n');
  assert.deepEqual(parseCounts(await readFile(join(cwd, 'out.tsv'), 'utf8')), countWordsByScanning(text));
}

async function writeAt(path: string, seconds: number): Promise<void> {
  await writeFile(path, 'x');
  await utimes(path, seconds, seconds);
}

describe('start-up from built code', () => {
  let treeDir: TempDir;
  let tree: BuiltTree;
  before(async () => {
    treeDir = await createTempDir('weft-built-tree-');
    tree = await buildTree(treeDir.path);
  });
  after(async () => {
    await treeDir?.remove();
  });

  it('counts a package as built only when its oldest dist .js is not older than its newest source', async () => {
    await using dir = await createTempDir('weft-built-code-');
    const pkg = dir.path;
    assert.equal(isBuildFresh(pkg), false, 'no dist/');
    await mkdir(join(pkg, 'src', 'deep'), { recursive: true });
    await mkdir(join(pkg, 'dist'), { recursive: true });
    await writeAt(join(pkg, 'src', 'deep', 'a.ts'), 1000);
    await writeAt(join(pkg, 'dist', 'index.d.ts'), 2000);
    assert.equal(isBuildFresh(pkg), false, 'a dist/ without .js');
    await writeAt(join(pkg, 'dist', 'index.js'), 2000);
    await writeAt(join(pkg, 'dist', 'chunk.js'), 1500);
    assert.equal(isBuildFresh(pkg), true);
    await writeAt(join(pkg, 'src', 'deep', 'a.ts'), 1800); // edited after part of the build
    assert.equal(isBuildFresh(pkg), false, 'a source newer than the oldest built file');
    await writeAt(join(pkg, 'dist', 'chunk.js'), 1800);
    assert.equal(isBuildFresh(pkg), true, 'the same mtime counts as built');
    assert.equal(useBuiltCode(pkg), false, 'a CLI without dist/main.js');
  });

  it('runs from source with tsx preloaded when asked to (WEFT_FROM_SOURCE=1), and the job still works', async () => {
    await using dir = await createTempDir('weft-from-source-');
    const summary = await weftRunJson(checkoutBin, checkoutJob, dir.path, { WEFT_FROM_SOURCE: '1' });
    assert.equal(summary['status'], 'succeeded');
    assert.deepEqual(summary['cli'], { code: 'source', tsx: 'preloaded', jobModule: 'as-is' });
  });

  it('runs the built CLI and its workers with plain node, the TypeScript job bundled by esbuild (no tsx), when the tree is freshly built', async () => {
    await using dir = await createTempDir('weft-from-built-');
    assert.equal(useBuiltCode(tree.cliDir), true, 'the copy is freshly built');
    // Every module the CLI and its workers load is recorded (NODE_OPTIONS reaches the forked workers).
    const loadsFile = join(dir.path, 'loads.txt');
    const summary = await weftRunJson(tree.bin, join(tree.examplesDir, 'word-count.ts'), dir.path, {
      NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import ${pathToFileURL(recorder).href}`.trim(),
      WEFT_TEST_LOADS_FILE: loadsFile,
      WEFT_FROM_SOURCE: '0', // whatever the suite runs with
    });
    assert.equal(summary['status'], 'succeeded');
    assert.deepEqual(summary['cli'], { code: 'built', tsx: 'none', jobModule: 'esbuild-bundle' });
    await assertCounts(dir.path);
    const loaded = (await readFile(loadsFile, 'utf8')).split('\n').filter((url) => url !== '');
    const copy = pathToFileURL(await realpath(treeDir.path)).href;
    assert.equal(loaded.filter((url) => url === `${copy}/packages/engine/dist/worker-main.js`).length, 2, 'both workers ran the built engine');
    assert.equal(loaded.filter((url) => url.startsWith(`${copy}/examples/.word-count.ts.weft-`)).length, 3, 'the CLI and both workers imported the bundle');
    assert.deepEqual(loaded.filter((url) => /\.(c|m)?ts$/.test(url)), [], 'no TypeScript module was loaded');
    assert.deepEqual(loaded.filter((url) => /\/node_modules\/tsx\/(?!node_modules\/)/.test(url)), [], 'tsx was not loaded');
    assert.deepEqual(loaded.filter((url) => url.startsWith(pathToFileURL(join(root, 'packages')).href)), [], "nothing of the checkout's packages was loaded");
    const leftovers = (await readdir(tree.examplesDir)).filter((name) => name.includes('.weft-'));
    assert.deepEqual(leftovers, [], 'the bundle is removed when weft exits');
  });

  it('dates every built file to the newest source its build began with, so a source saved during the build leaves the build stale', async () => {
    for (const name of ['engine', 'cli', 'ui']) {
      const dir = join(tree.cliDir, '..', name);
      const sourcesAt = newestSourceMtime(dir) as number;
      const built = (await readdir(join(dir, 'dist'), { recursive: true })).filter((file) => file.endsWith('.js'));
      assert.ok(built.length > 0, `${name} has built files`);
      for (const file of built) {
        const builtAt = (await stat(join(dir, 'dist', file))).mtimeMs;
        assert.ok(builtAt > sourcesAt && builtAt < sourcesAt + 3, `${name}/dist/${file} dated ${builtAt}, its newest source ${sourcesAt}`);
      }
    }
  });

  it('runs from source when a package is stale (a source of its engine edited after the build)', async () => {
    await using dir = await createTempDir('weft-stale-build-');
    assert.equal(useBuiltCode(tree.cliDir), true, 'the copy is freshly built');
    // An hour after the build, then restored: the copy's other cases see a fresh build again.
    const source = join(tree.cliDir, '..', 'engine', 'src', 'index.ts');
    const before = await stat(source);
    await utimes(source, before.atime, new Date(Date.now() + 3_600_000));
    try {
      assert.equal(useBuiltCode(tree.cliDir), false);
      const summary = await weftRunJson(tree.bin, join(tree.examplesDir, 'word-count.ts'), dir.path, { WEFT_FROM_SOURCE: '0' });
      assert.equal(summary['status'], 'succeeded');
      assert.deepEqual(summary['cli'], { code: 'source', tsx: 'preloaded', jobModule: 'as-is' });
      await assertCounts(dir.path);
    } finally {
      await utimes(source, before.atime, before.mtime);
    }
  });
});
