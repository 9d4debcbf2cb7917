// A streaming `weft run --job-id X` (checkpointed, 2 worker processes) while other runs of X start. Its
// only store calls are its checkpoints, so those are where it learns of a takeover:
// - a run refused at start for `--from-checkpoint 9999` (no such checkpoint) takes nothing: the lease's
//   epoch stays 1 and the running run finishes with exact counts. Before, the refused run took the lease
//   first and fenced the running one;
// - a run restoring `--from-checkpoint latest` takes the job over and counts exactly; the older run ends
//   at once, exit 1 with one WEFT_ERR_FENCED line. Before, its checkpoint coordinator took the store's
//   refusal for an unreachable store: it never checkpointed again and its ended sources waited forever.
// Real `weft` processes, a real SQLite job event log; counts against a naive count computed here.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { WORDS, wordOf } from './fixtures/streaming-checkpoint-workers-job.js';
import { descendants } from './helpers/process-tree.js';
import { assertFencedExit, type Running, start, until } from './helpers/stale-master.js';

const job = fileURLToPath(new URL('./fixtures/streaming-checkpoint-workers-job.ts', import.meta.url));
const COUNT = 40_000;
/** 40 000 words at 8 000 a second: about five seconds, long enough for another run to start meanwhile. */
const ARGS = ['--', '--count', String(COUNT), '--rate', '8000'];

function referenceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (let seq = 0; seq < COUNT; seq++) counts.set(wordOf(seq), (counts.get(wordOf(seq)) ?? 0) + 1);
  return counts;
}

function countsOf(stdout: string): Map<string, number> {
  const summary = JSON.parse(stdout) as { collected: { counts?: [string, number][] } };
  const counts = new Map<string, number>();
  for (const [word, n] of summary.collected.counts ?? []) {
    assert.ok(WORDS.includes(word) && !counts.has(word), `a malformed or repeated record: ${word}`);
    counts.set(word, n);
  }
  return counts;
}

describe('weft run: other runs of a running streaming job id', () => {
  let dir = '';
  let meta = '';
  const running: Running[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-fenced-streaming-'));
    meta = join(dir, 'meta.db');
  });
  after(async () => {
    for (const r of running) r.child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  const run = (jobId: string, extra: readonly string[] = []): Running => {
    const r = start(['run', job, '--job-id', jobId, '--store', pathToFileURL(join(dir, 'store')).href, '--meta', `sqlite://${meta}`, '--workers', '2', '--parallelism', '2', '--checkpoint-interval', '100ms', '--json', ...extra, ...ARGS], dir);
    running.push(r);
    return r;
  };
  const query = <T>(sql: string, ...params: unknown[]): T | undefined => {
    const db = new Database(meta, { readonly: true, fileMustExist: true, timeout: 10_000 });
    try {
      return db.prepare(sql).get(...params) as T | undefined;
    } finally {
      db.close();
    }
  };
  const checkpointed = (jobId: string) => until(`a completed checkpoint of ${jobId}`, async () => {
    try {
      return (query<{ n: number }>('SELECT COUNT(*) AS n FROM weft_checkpoints WHERE job_id = ?', jobId)?.n ?? 0) > 0;
    } catch {
      return false; // the database or its table is not there yet
    }
  });
  const epochOf = (jobId: string): number | undefined => query<{ epoch: number }>('SELECT epoch FROM weft_job_leases WHERE job_id = ?', jobId)?.epoch;

  it('a run refused for a checkpoint that does not exist takes no lease: the running run finishes exactly', { timeout: 180_000 }, async () => {
    const a = run('refused');
    await checkpointed('refused');
    const refused = await run('refused', ['--from-checkpoint', '9999']).done;
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /cannot restore job refused from checkpoint 9999: no such checkpoint/);
    assert.doesNotMatch(refused.stderr, /^\s+at /m, 'no stack trace');
    assert.equal(epochOf('refused'), 1, 'the lease is still the running run');
    const outcome = await a.done;
    assert.equal(outcome.code, 0, outcome.stderr);
    assert.deepEqual(countsOf(outcome.stdout), referenceCounts());
  });

  it('a run restoring the latest checkpoint takes the job over; the older run ends at once, fenced', { timeout: 180_000 }, async () => {
    const a = run('taken');
    await checkpointed('taken');
    const descendantsOfA = descendants(a.child.pid!);
    const b = await run('taken', ['--from-checkpoint', 'latest']).done;
    assert.equal(b.code, 0, b.stderr);
    assert.deepEqual(countsOf(b.stdout), referenceCounts(), 'exactly once across the takeover');
    assert.equal(epochOf('taken'), 2);
    // the older run had its next checkpoint refused long before now (every 100 ms); 30 s is a guard, not a timing
    const outcome = await Promise.race([a.done, new Promise<undefined>((resolve) => setTimeout(resolve, 30_000, undefined))]);
    assert.ok(outcome !== undefined, 'the fenced run still runs 30 s after the newer one finished');
    assertFencedExit(outcome, descendantsOfA);
  });
});
