// Checkpoints of a streaming job on two real worker processes (`weft run --workers 2 --checkpoint-interval`):
// the job master's one JobCheckpointing coordinates them over IPC. A worker SIGKILLed mid-run
// (--inject-faults kill-worker:TASK@AT) restarts the region from the latest completed checkpoint: the
// exactly-once counts equal a naive count computed here, and the restarted sources read only what came
// after the checkpoint (they did not start over). A failed run at parallelism 3 is restored at
// parallelism 2 (--from-checkpoint latest); and approximate recovery on workers restores the restarted
// tasks from the latest checkpoint.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runCli } from '@weft/cli';
import { WORDS, wordOf } from './fixtures/streaming-checkpoint-workers-job.js';

const job = fileURLToPath(new URL('./fixtures/streaming-checkpoint-workers-job.ts', import.meta.url));
const COUNT = 16_000;
/** The stream's args: 16 000 words at 8 000 a second over all source subtasks: about two seconds. */
const ARGS = ['--', '--count', String(COUNT), '--rate', '8000'];

interface Summary {
  status: string;
  failures: number;
  executorsLost: { taskExecutorId: string }[];
  checkpoints: { mode: string; completed: number; tasksRestored: number; restoredFrom?: number; latestCompletedId?: number };
  vertices: { id: string; recordsIn: number }[];
  collected: { counts?: [string, number][] };
  approximateRecoveries?: { task: string }[];
}

function referenceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (let seq = 0; seq < COUNT; seq++) counts.set(wordOf(seq), (counts.get(wordOf(seq)) ?? 0) + 1);
  return counts;
}

/** The collected counts, each word once and well formed. */
function countsOf(summary: Summary): Map<string, number> {
  const counts = new Map<string, number>();
  for (const record of summary.collected.counts ?? []) {
    const [word, n] = record;
    assert.ok(WORDS.includes(word) && Number.isSafeInteger(n) && n > 0, `a malformed record: ${JSON.stringify(record)}`);
    assert.equal(counts.has(word), false, `${word} counted twice`);
    counts.set(word, n);
  }
  return counts;
}

/** What the final attempts of the source read (a restored source starts from its checkpointed position). */
const sourceRecords = (summary: Summary): number => summary.vertices.find((v) => v.id === 'words')?.recordsIn ?? Number.NaN;

describe('weft run --workers 2 --checkpoint-interval: checkpoints across worker processes', () => {
  let dir = '';
  let stores: string[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-checkpoint-workers-'));
    stores = ['--store', pathToFileURL(join(dir, 'store')).href, '--meta', `sqlite://${join(dir, 'meta.db')}`];
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function weft(args: string[]): Promise<{ code: number; summary: Summary | undefined; stderr: string }> {
    let stdout = '';
    let stderr = '';
    const code = await runCli(['run', job, ...stores, '--workers', '2', '--checkpoint-interval', '100ms', '--json', ...args], { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, cwd: dir, env: {} });
    return { code, summary: stdout === '' ? undefined : (JSON.parse(stdout) as Summary), stderr };
  }

  it('restarts from the latest checkpoint after a worker is SIGKILLed and counts exactly once', async () => {
    const { code, summary, stderr } = await weft(['--parallelism', '2', '--inject-faults', 'kill-worker:count#1@5000', ...ARGS]);
    assert.equal(code, 0, stderr);
    assert.ok(summary !== undefined);
    assert.equal(summary.executorsLost.length, 1, 'the worker running count#1 was killed');
    assert.equal(summary.checkpoints.mode, 'aligned');
    assert.ok(summary.checkpoints.completed > 0 && summary.checkpoints.tasksRestored > 0, `checkpoints: ${JSON.stringify(summary.checkpoints)}`);
    assert.deepEqual(countsOf(summary), referenceCounts());
    assert.ok(sourceRecords(summary) < COUNT, `the restarted sources started from their checkpointed positions: they read ${sourceRecords(summary)} of ${COUNT}`);
  });

  it('restores a run that failed at parallelism 3 on workers at parallelism 2 (--from-checkpoint latest) with the exact counts', async () => {
    const failed = await weft(['--job-id', 'rescaled', '--parallelism', '3', '--restart-strategy', 'none', '--inject-faults', 'kill-worker:count#2@3000', ...ARGS]);
    assert.equal(failed.code, 1, failed.stderr);
    assert.ok((failed.summary?.checkpoints.completed ?? 0) > 0, `the failed run completed a checkpoint: ${JSON.stringify(failed.summary?.checkpoints)}`);
    const restored = await weft(['--job-id', 'rescaled', '--parallelism', '2', '--from-checkpoint', 'latest', ...ARGS]);
    assert.equal(restored.code, 0, restored.stderr);
    assert.ok(restored.summary !== undefined);
    assert.equal(restored.summary.checkpoints.restoredFrom, failed.summary?.checkpoints.latestCompletedId);
    assert.equal(restored.summary.checkpoints.tasksRestored, 4, 'every task of the restored run started from the checkpoint');
    assert.deepEqual(countsOf(restored.summary), referenceCounts());
    assert.ok(sourceRecords(restored.summary) < COUNT, `the restored sources started from their checkpointed positions: they read ${sourceRecords(restored.summary)}`);
  });

  it('approximate recovery on workers: the tasks restarted after a worker is killed start from the latest checkpoint', async () => {
    const { code, summary, stderr } = await weft(['--parallelism', '2', '--approximate-recovery', '--inject-faults', 'kill-worker:count#1@6000', ...ARGS]);
    assert.equal(code, 0, stderr);
    assert.ok(summary !== undefined);
    assert.equal(summary.checkpoints.mode, 'at-least-once');
    assert.ok((summary.approximateRecoveries ?? []).some((r) => r.task === 'count#1'), `count#1 recovered alone: ${JSON.stringify(summary.approximateRecoveries)}`);
    assert.ok(summary.checkpoints.tasksRestored > 0, `checkpoints: ${JSON.stringify(summary.checkpoints)}`);
    // lost: what was in flight to and from the killed tasks, and what the source that kept running (words#0)
    // sent the restarted counts after the checkpoint (backpressure holds it back while they restart): 500
    // to 2 100 records seen. Restarted from empty state instead (count#0 transitively, as its input words#1
    // restarts), the counts lose all that words#0 sent before the kill (words#1 replays its): 4 300 to 4 900 seen.
    const lost = COUNT - [...countsOf(summary).values()].reduce((a, b) => a + b, 0);
    assert.ok(lost >= 0 && lost <= 3000, `lost ${lost} records: the restarted counts started from the checkpoint's`);
  });
});
