// A run that fails after it took its job id's lease but before its job master ran — its blocking shuffle
// cannot be reached (as a cluster run none of whose executors took the job) — ends its log with
// `job-failed`, so the run is listed failed, not unfinished forever (found by a chaos review: `weft jobs`
// showed such runs as `unfinished 0/?`). The log's summary is summarizeJobRun's, as `weft jobs` reads it.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ShuffleError } from '@weft/shuffle-api';
import { defineJob, runJob, summarizeJobRun } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';
import { testingRecordingBlockingShuffle } from './support/recording-blocking-shuffle.js';
import { testingJobEventLog } from './support/testing-job-event-log.js';

const job = defineJob((ctx) => void ctx.range(0, 10, { name: 'a' }).collect('out'), { name: 'failed-before-run' });

const UNREACHABLE = 'metadata store redis://127.0.0.1:1/0 unreachable: connect ECONNREFUSED';

/** A blocking shuffle whose master cannot start: its store is unreachable. */
function unreachableShuffle() {
  const factory = testingRecordingBlockingShuffle();
  const master = factory.createShuffleMaster();
  return { ...factory, createShuffleMaster: () => ({ ...master, start: () => Promise.reject(new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', UNREACHABLE)) }) };
}

describe('a run that fails before its job master ran', () => {
  it('ends its log with job-failed, naming the error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-failed-before-run-'));
    try {
      const eventLog = testingJobEventLog();
      await assert.rejects(
        runJob({ job, cwd: dir, parallelism: 1, jobId: 'nox', shuffle: { pipelined: testingNoShuffleFactory(), blocking: unreachableShuffle() }, eventLog }),
        (e: { code?: string }) => e.code === 'SHF_ERR_STORAGE_UNAVAILABLE',
      );
      const events = eventLog.events.get('nox') ?? [];
      assert.deepEqual(events.at(-1)?.data, { error: { code: 'SHF_ERR_STORAGE_UNAVAILABLE', message: UNREACHABLE } });
      assert.equal(events.at(-1)?.type, 'job-failed');
      assert.equal(summarizeJobRun({ jobId: 'nox', epoch: 1, owner: undefined, takenAtMs: 0 }, events).status, 'failed');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
