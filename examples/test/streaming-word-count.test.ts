// The streaming word count through the real `weft` command line: checkpoints to the --store (a local
// directory) recorded in the --meta store (SQLite); a seeded throw restarts the job from its latest
// checkpoint with the fault-free output; a failed run restored by a new process with another parallelism
// (--from-checkpoint latest); and bad checkpoint flags refused with exit 2 naming what is wrong (those
// in process, through runCli: a refusal comes before any job runs).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type CliIo, runCli } from '@weft/cli';
import { streamWord } from '../lib/stream-words.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');
const job = join(root, 'examples', 'streaming-word-count.ts');
const RECORDS = 24_000;

function weft(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/** The expected `word<TAB>count` lines, sorted. */
function reference(records: number): string[] {
  const counts = new Map<string, number>();
  for (let seq = 0; seq < records; seq++) counts.set(streamWord(seq), (counts.get(streamWord(seq)) ?? 0) + 1);
  return [...counts].map(([w, n]) => `${w}\t${n}`).sort();
}

async function linesOf(path: string): Promise<string[]> {
  return (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '').sort();
}

describe('weft run --checkpoint-interval: the streaming word count', () => {
  let dir = '';
  let stores: string[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-streaming-'));
    stores = ['--store', pathToFileURL(join(dir, 'store')).href, '--meta', `sqlite://${join(dir, 'meta.db')}`];
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('restarts from the latest checkpoint after a seeded throw and writes the fault-free counts', async () => {
    const output = join(dir, 'faulted.tsv');
    const run = await weft(['run', job, ...stores, '--parallelism', '2', '--checkpoint-interval', '25ms', '--inject-faults', 'throw:words#1@5000', '--json', '--', '--records', String(RECORDS), '--rate', '30000', '--output', output], dir);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as { failures: number; checkpoints: { completed: number; tasksRestored: number } };
    assert.equal(summary.failures, 1);
    assert.ok(summary.checkpoints.tasksRestored > 0, JSON.stringify(summary.checkpoints));
    assert.deepEqual(await linesOf(output), reference(RECORDS));
  });

  it('restores a failed run at parallelism 3 from a new process at parallelism 2 (--from-checkpoint latest)', async () => {
    const output = join(dir, 'restored.tsv');
    const args = ['--', '--records', String(RECORDS), '--rate', '30000', '--output', output];
    const failed = await weft(['run', job, ...stores, '--job-id', 'rescaled', '--parallelism', '3', '--checkpoint-interval', '25ms', '--inject-faults', 'throw:words#2@5000', '--restart-strategy', 'none', ...args], dir);
    assert.equal(failed.code, 1, failed.stderr);
    const restored = await weft(['run', job, ...stores, '--job-id', 'rescaled', '--parallelism', '2', '--checkpoint-interval', '25ms', '--from-checkpoint', 'latest', '--json', ...args], dir);
    assert.equal(restored.code, 0, restored.stderr);
    const summary = JSON.parse(restored.stdout) as { checkpoints: { restoredFrom?: number } };
    assert.ok((summary.checkpoints.restoredFrom ?? 0) >= 1, JSON.stringify(summary.checkpoints));
    assert.deepEqual(await linesOf(output), reference(RECORDS));
  });

  const refusals: [args: string[], message: RegExp][] = [
    [['--checkpoint-interval', '0'], /--checkpoint-interval must be a duration > 0 such as 1s, 500ms or 2m, got "0"/],
    [['--checkpoint-interval', '0s'], /--checkpoint-interval must be a duration > 0/],
    [['--checkpoint-interval', 'soon'], /--checkpoint-interval must be a duration > 0 .*got "soon"/],
    [['--checkpoint-interval', '1s', '--from-checkpoint', 'latest'], /--from-checkpoint needs --job-id/],
    [['--from-checkpoint', 'latest', '--job-id', 'x'], /--from-checkpoint needs --checkpoint-interval/],
    [['--checkpoint-interval', '1s', '--job-id', 'never-ran', '--from-checkpoint', 'latest'], /cannot restore job never-ran from checkpoint latest: no such checkpoint \(it has no completed checkpoint\)/],
  ];
  for (const [flags, message] of refusals) {
    it(`refuses ${flags.join(' ')} with exit code 2`, async () => {
      // in process: the refusal is the command's, before any job runs
      let stderr = '';
      const io: CliIo = { stdout: { write: () => true }, stderr: { write: (t: string) => ((stderr += t), true) }, cwd: dir, env: {} };
      assert.equal(await runCli(['run', job, ...stores, ...flags, '--', '--records', '10'], io), 2, stderr);
      assert.match(stderr, message);
    });
  }
});
