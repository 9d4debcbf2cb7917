// What `weft` loads before a command runs: the CLI forks `weft run`'s workers only once its own modules are
// loaded, so a module only another command needs (the shuffle server) must not be among them.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createTempDir } from '@weft/testkit';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const recorder = pathToFileURL(fileURLToPath(new URL('./helpers/record-loads.mjs', import.meta.url))).href;

/** The module URLs `weft <args>` loads, run from source with a hook recording every load. */
async function modulesLoaded(args: readonly string[]): Promise<string[]> {
  await using dir = await createTempDir('weft-start-up-imports-');
  const file = join(dir.path, 'loads.txt');
  await new Promise<void>((resolve, reject) => {
    execFile(process.execPath, ['--conditions=source', '--import', 'tsx', '--import', recorder, main, ...args], { cwd: root, env: { ...process.env, WEFT_TEST_LOADS_FILE: file } }, (error) =>
      error === null ? resolve() : reject(error),
    );
  });
  return (await readFile(file, 'utf8')).split('\n').filter((line) => line !== '');
}

describe('weft start-up', () => {
  it('loads the CLI and the engine, not the shuffle server, before a command runs', async () => {
    const loaded = await modulesLoaded(['run', '--help']);
    assert.ok(loaded.some((url) => url.includes('/packages/cli/src/commands/shuffle-server-command.ts')), 'the commands were loaded');
    assert.ok(loaded.some((url) => url.includes('/packages/engine/src/')), 'the engine was loaded');
    assert.deepEqual(loaded.filter((url) => url.includes('/packages/shuffle-remote/src/server/')), []);
  });
});
