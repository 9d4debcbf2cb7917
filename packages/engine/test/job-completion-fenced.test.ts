// JobCompletion of a run that a newer job master run took over, without this run having learned it yet
// (nothing it did since reached a store): its last event's refusal (WEFT_ERR_FENCED from the job's event
// log) must come before it touches the sinks' directories, which the newer run writes into too. Before,
// a failed run discarded them first, deleting the newer run's part files, and only then learned from its
// `job-failed` append that it was fenced; a succeeded run published before its earlier events were stored.
// The event log is a listener that refuses as a real one does; the sinks are real files.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { noopLogger } from '@weft/shuffle-api';
import { EngineError } from '../src/errors/engine-error.js';
import { JobCompletion, type JobCompletionOptions } from '../src/job-master/job-completion.js';
import { JobEventEmitter } from '../src/job-master/job-event-emitter.js';
import type { JobEvent } from '../src/job-master/job-events.js';
import { JobFence } from '../src/job-master/job-fence.js';
import type { SinkOutput } from '../src/operators/stream-operator.js';

/** An event log whose lease epoch 2 took over: every append of epoch 1 from now on is refused. */
function takenOverLog(): { listener: { onJobEvent(event: JobEvent): Promise<void> }; refused: string[] } {
  const refused: string[] = [];
  return {
    refused,
    listener: {
      async onJobEvent(event) {
        refused.push(event.type);
        throw new EngineError('WEFT_ERR_FENCED', 'job j: append by epoch 1 refused, epoch 2 opened the job since; nothing was written', { context: { jobId: 'j', epoch: 1, newestEpoch: 2 } });
      },
    },
  };
}

async function withSinkDir(body: (dir: string, tempDir: string, part: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-completion-fenced-'));
  try {
    // the sink's per-job directory, holding a part file of the newer run's attempt
    const tempDir = join(dir, '.out.txt.weft-j');
    await mkdir(tempDir);
    const part = join(tempDir, 'part-00000@1');
    await writeFile(part, 'the newer run\n');
    await body(dir, tempDir, part);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function completion(request: { events: JobEventEmitter; fence: JobFence; tempDir: string; outputs: SinkOutput[] }): JobCompletion {
  const options: JobCompletionOptions = {
    jobName: 'j',
    sinkTempDirs: [request.tempDir],
    fileSystems: [],
    publishedSinks: new Map(),
    events: request.events,
    // what the completion reads of the scheduler's records: the finished attempts' sinks and the counts it reports
    attempts: { results: [{ sinks: request.outputs }], deployedTotal: 1, numbers: () => ({}) } as unknown as JobCompletionOptions['attempts'],
    restarts: { failures: 0, failovers: [] } as unknown as JobCompletionOptions['restarts'],
    releases: { released: 0, bytesReleased: 0 } as unknown as JobCompletionOptions['releases'],
    fence: request.fence,
  };
  return new JobCompletion(options);
}

describe('JobCompletion of a run taken over by a newer one', () => {
  it('a failed run learns it is fenced from its job-failed append before it discards anything: the sink directory stays', async () =>
    withSinkDir(async (_dir, tempDir, part) => {
      const log = takenOverLog();
      const fence = new JobFence({ jobId: 'j' as never, epoch: 1, logger: noopLogger });
      const events = new JobEventEmitter(log.listener, (error) => fence.observe(error));
      const done = completion({ events, fence, tempDir, outputs: [] });
      await done.failed(new EngineError('WEFT_ERR_JOB_FAILED', 'job "j" failed: task sort#0 failed: partition not found'), false);
      const outcome = await done.outcome;
      assert.deepEqual(log.refused, ['job-failed']);
      assert.equal(outcome.status, 'failed');
      assert.equal(outcome.error?.code, 'WEFT_ERR_FENCED');
      assert.match(outcome.error?.message ?? '', /epoch 2 took the job over/);
      assert.ok(existsSync(part), "the newer run's part file is still there");
    }));

  it('a succeeded run whose last task-finished append is refused publishes nothing', async () =>
    withSinkDir(async (dir, tempDir, part) => {
      const log = takenOverLog();
      const fence = new JobFence({ jobId: 'j' as never, epoch: 1, logger: noopLogger });
      const events = new JobEventEmitter(log.listener, (error) => fence.observe(error));
      const output = join(dir, 'out.txt');
      const done = completion({ events, fence, tempDir, outputs: [{ kind: 'text-file', sink: 'out', path: output, tempDir, file: part, subtask: 0, parallelism: 1 }] });
      // the last task's finish, not yet stored when every task is done
      events.emit({ type: 'task-finished', data: { task: 'sort#0', attempt: 0, sinks: [] } } as unknown as JobEvent);
      await done.succeeded();
      const outcome = await done.outcome;
      assert.equal(outcome.status, 'failed');
      assert.equal(outcome.error?.code, 'WEFT_ERR_FENCED');
      assert.equal(existsSync(output), false, 'nothing published');
      assert.ok(existsSync(part), "the newer run's part file is still there");
    }));
});
