// A run SIGKILLed with its workers (the whole process group) while its sort spills leaves its spill
// directories behind; the next run of that --job-id removes them. Real `weft` processes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createTempDir, type TempDir } from '@weft/testkit';
import { weft } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));

async function spillFiles(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  return (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.spill'));
}

describe('weft run --spill-dir after a SIGKILL of the whole run', () => {
  let dir: TempDir;
  before(async () => {
    dir = await createTempDir('weft-spill-leftovers-');
  });
  after(() => dir.remove());

  it('the next run of the job id removes the spill directories the killed tasks left', async () => {
    const spill = join(dir.path, 'spill');
    const args = ['run', terasort, '--job-id', 'spill-kill', '--parallelism', '2', '--workers', '2', '--task-memory', '64k', '--spill-dir', spill,
      '--meta', `sqlite://${join(dir.path, 'meta.db')}`, '--store', pathToFileURL(join(dir.path, 'store')).href, '--', '--records', '200000', '--output', join(dir.path, 'out.txt')];
    // its own process group: the kill takes the job master and its workers at once, as an OOM kill or a crash would
    const child = spawn(process.execPath, [bin, ...args], { cwd: dir.path, stdio: 'ignore', detached: true });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      while ((await spillFiles(spill)).length === 0) {
        if (child.exitCode !== null) throw new Error('the run ended before its sort spilled');
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      process.kill(-(child.pid as number), 'SIGKILL');
    }
    await exited;
    const left = (await readdir(spill)).filter((n) => n.startsWith('weft-spill-'));
    assert.ok(left.length > 0, 'the killed tasks left spill directories');

    const again = await weft(bin, args, dir.path);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual((await readdir(spill)).filter((n) => n.startsWith('weft-spill-')), [], 'no spill directory is left');
  });
});
