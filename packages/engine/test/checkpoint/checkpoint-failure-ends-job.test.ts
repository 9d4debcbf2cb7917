// A streaming job whose checkpoints fail more times in a row than tolerated ends as a *failed* job, with
// WEFT_ERR_CHECKPOINT_FAILED in its error, its event log ending in `job-failed`. Before, the coordinator's
// failure went through the caller's abort: the job ended as `job-cancelled`, "was aborted". And its
// checkpoints end as a failed run's do, even when the caller's signal comes while it is failing. A storage
// that cannot be written at all is refused at start.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Logger, noopLogger } from '@weft/shuffle-api';
import { type CheckpointingOptions, type CheckpointStorage, defineJob, InMemoryCheckpointStorage, type JobEvent, runJob, type RunJobOptions } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

/** A storage whose every snapshot write fails (a disk that filled up after the run's start probe): no checkpoint can complete. */
class RefusingStorage extends InMemoryCheckpointStorage implements CheckpointStorage {
  override async write(key: string, bytes: Uint8Array): Promise<void> {
    if (!/\/chk-\d+\//.test(key)) return super.write(key, bytes);
    throw new Error(`refused to write ${key}: disk full`);
  }
}

/** A storage that refuses every write, the start's probe included (a directory that is a file, a bucket that refuses writes). */
class ReadOnlyStorage extends InMemoryCheckpointStorage implements CheckpointStorage {
  override async write(key: string): Promise<void> {
    throw new Error(`refused to write ${key}: read-only`);
  }
}

/** Refuses the snapshots of checkpoint `from` and later: the checkpoints before it complete. */
class RefusingFromStorage extends InMemoryCheckpointStorage implements CheckpointStorage {
  constructor(private readonly from: number) {
    super();
  }

  override async write(key: string, bytes: Uint8Array): Promise<void> {
    const id = Number(/\/chk-(\d+)\//.exec(key)?.[1]);
    if (id >= this.from) throw new Error(`refused to write ${key}: disk full`);
    return super.write(key, bytes);
  }
}

/** A logger that calls `onFailing` when the job master logs its `running -> failing` transition. */
function failingWatch(onFailing: () => void): Logger {
  const logger: Logger = {
    ...noopLogger,
    info: (fields, message) => {
      if ((typeof fields === 'string' ? fields : message) === 'running -> failing') onFailing();
    },
    child: () => logger,
  };
  return logger;
}

/** A streaming count in process, no restart strategy, checkpoints every 20 ms as `checkpointing` adds; its result and events. */
async function runCount(name: string, checkpointing: Omit<CheckpointingOptions, 'intervalMs'>, extra: Pick<RunJobOptions, 'logger' | 'signal'> = {}) {
  const memory = createMemoryShuffleServiceFactory();
  const events: JobEvent[] = [];
  const job = defineJob((ctx) => {
    ctx
      .generate((seq) => `w${seq % 7}`, { count: 1_000_000, splits: 1, ratePerSecond: 20_000 })
      .keyBy((w) => w)
      .count({ combine: false })
      .collect('counts');
  }, { name });
  const result = await runJob({
    job,
    parallelism: 1,
    shuffle: { pipelined: memory, blocking: memory },
    restartStrategy: { type: 'none' },
    checkpointing: { intervalMs: 20, ...checkpointing },
    eventListener: { onJobEvent: (event) => void events.push(event) },
    ...extra,
  });
  return { result, events };
}

describe('checkpoint failures beyond the tolerated', () => {
  it('end the job as failed (job-failed, WEFT_ERR_CHECKPOINT_FAILED), not cancelled', { timeout: 20_000 }, async () => {
    const { result, events } = await runCount('refused-checkpoints', { tolerableFailures: 1, storage: new RefusingStorage() });
    assert.equal(result.status, 'failed');
    const chain: string[] = [];
    for (let e: unknown = result.error; e instanceof Error; e = e.cause) chain.push(`${(e as { code?: string }).code ?? '-'}: ${e.message}`);
    assert.ok(chain.some((c) => c.startsWith('WEFT_ERR_CHECKPOINT_FAILED: ') && /2 checkpoint failures in a row, 1 tolerated/.test(c)), chain.join('\n'));
    assert.ok(!chain.some((c) => /aborted/.test(c)), chain.join('\n'));
    const last = events.at(-1);
    assert.equal(last?.type, 'job-failed', `the last event: ${JSON.stringify(last)}`);
  });

  it('a storage that cannot take a snapshot at all is refused before the job starts (WEFT_ERR_INVALID_ARGUMENT naming it)', { timeout: 20_000 }, async () => {
    const storage = new ReadOnlyStorage();
    await assert.rejects(
      runCount('read-only', { storage }),
      (error: Error & { code?: string }) => error.code === 'WEFT_ERR_INVALID_ARGUMENT' && /^invalid checkpointing\.storage: .* cannot take a checkpoint's snapshots: writing checkpoints\/.*\/probe-[0-9a-f-]+ failed: refused to write .*: read-only$/.test(error.message),
    );
    assert.deepEqual(storage.keys(), [], 'nothing written');
  });

  it('a probe the storage would not remove at the start is removed with the run\'s checkpoints at its end', { timeout: 20_000 }, async () => {
    const storage = new (class extends InMemoryCheckpointStorage {
      refusals = 0;
      override async delete(key: string): Promise<void> {
        if (/\/probe-/.test(key) && this.refusals++ === 0) throw new Error('delete refused');
        return super.delete(key);
      }
    })();
    const memory = createMemoryShuffleServiceFactory();
    const job = defineJob((ctx) => {
      ctx.generate((seq) => `w${seq % 7}`, { count: 2_000, splits: 1, ratePerSecond: 20_000 }).keyBy((w) => w).count({ combine: false }).collect('counts');
    }, { name: 'probe-left' });
    const result = await runJob({ job, parallelism: 1, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 20, storage } });
    assert.equal(result.status, 'succeeded');
    assert.equal(storage.refusals >= 1, true, 'the start could not remove its probe');
    assert.deepEqual(storage.keys(), [], 'nothing left: the run succeeded, its checkpoints and the probe went');
  });

  it('keep their checkpoints as a failed run does (delete-on-cancellation), a Ctrl-C while it fails notwithstanding', { timeout: 20_000 }, async () => {
    const storage = new RefusingFromStorage(3);
    const controller = new AbortController();
    const { result, events } = await runCount('refused-later', { storage, retention: 'delete-on-cancellation' }, { logger: failingWatch(() => controller.abort(new Error('Ctrl-C'))), signal: controller.signal });
    assert.equal(result.status, 'failed');
    assert.ok(controller.signal.aborted, 'the signal came while the job was failing');
    assert.equal(events.at(-1)?.type, 'job-failed');
    assert.ok(storage.keys().some((k) => /\/chk-2\//.test(k)), `checkpoint 2's snapshots are kept: ${storage.keys().join(', ')}`);
  });
});
