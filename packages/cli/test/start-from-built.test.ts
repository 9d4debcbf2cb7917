// `weft` starts from the built code (dist/, plain node) only when every package it loads is built and
// not older than its sources; otherwise from the TypeScript sources through tsx. What ran is observable in
// `weft run --json` ("cli": which code, whether tsx was preloaded, how the TypeScript job module was
// loaded — through that tsx, or bundled by esbuild into plain JavaScript). CI runs from source (no build): the built-tree case runs where a fresh build exists.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createTempDir } from '@weft/testkit';
// @ts-expect-error plain JavaScript next to the shim, no declarations
import { isBuildFresh, useBuiltCode } from '../bin/built-code.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const cliDir = fileURLToPath(new URL('..', import.meta.url));
const bin = join(cliDir, 'bin', 'weft.js');

function weftRunJson(cwd: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const args = [bin, 'run', join(root, 'examples', 'word-count.ts'), '--parallelism', '2', '--workers', '2', '--json', '--', '--lines', '300', '--output', 'out.tsv'];
    execFile(process.execPath, args, { cwd, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as Record<string, unknown>);
    });
  });
}

async function writeAt(path: string, seconds: number): Promise<void> {
  await writeFile(path, 'x');
  await utimes(path, seconds, seconds);
}

describe('start-up from built code', () => {
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
    const summary = await weftRunJson(dir.path, { WEFT_FROM_SOURCE: '1' });
    assert.equal(summary['status'], 'succeeded');
    assert.deepEqual(summary['cli'], { code: 'source', tsx: 'preloaded', jobModule: 'as-is' });
  });

  it('runs the built CLI and its workers with plain node, the TypeScript job bundled by esbuild (no tsx), when the tree is freshly built', { skip: useBuiltCode(cliDir) ? false : 'no fresh build here (npm run build)' }, async () => {
    await using dir = await createTempDir('weft-from-built-');
    const summary = await weftRunJson(dir.path, {});
    assert.equal(summary['status'], 'succeeded');
    assert.deepEqual(summary['cli'], { code: 'built', tsx: 'none', jobModule: 'esbuild-bundle' });
    const leftovers = (await readdir(join(root, 'examples'))).filter((name) => name.includes('.weft-'));
    assert.deepEqual(leftovers, [], 'the bundle is removed when weft exits');
  });

  it('runs from source when a package is stale (its built engine older than its sources)', async () => {
    await using dir = await createTempDir('weft-stale-build-');
    // A built tree is made stale for this one run by dating the engine's entry back (restored after):
    // no source file is touched.
    const engineEntry = join(root, 'packages', 'engine', 'dist', 'index.js');
    const before = useBuiltCode(cliDir) ? await stat(engineEntry) : undefined;
    try {
      if (before !== undefined) await utimes(engineEntry, before.atime, new Date(1000));
      assert.equal(useBuiltCode(cliDir), false);
      const summary = await weftRunJson(dir.path, {});
      assert.equal(summary['status'], 'succeeded');
      assert.deepEqual(summary['cli'], { code: 'source', tsx: 'preloaded', jobModule: 'as-is' });
    } finally {
      if (before !== undefined) await utimes(engineEntry, before.atime, before.mtime);
    }
  });
});
