// A checkpointed job runs in the exchange mode its own definition names, else ALL_EDGES_PIPELINED; runJob's
// `exchangeMode` overrides both. Before, checkpointing replaced the definition's mode with
// ALL_EDGES_PIPELINED without a word: a job defined approximate ran exactly-once checkpoints, not approximate.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CheckpointingOptions, defineJob, type ExchangeMode, InMemoryCheckpointStorage, isEngineError, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

function streamingJob(exchangeMode?: ExchangeMode) {
  return defineJob(
    (ctx) => {
      ctx.generate((seq) => seq % 7, { count: 2000, splits: 2, ratePerSecond: 20_000 }).keyBy((x) => x).count().collect('counts');
    },
    { name: 'streaming', ...(exchangeMode === undefined ? {} : { exchangeMode }) },
  );
}

function run(job: ReturnType<typeof streamingJob>, checkpointing: Partial<CheckpointingOptions> = {}, exchangeMode?: ExchangeMode) {
  const memory = createMemoryShuffleServiceFactory();
  return runJob({
    job,
    parallelism: 2,
    shuffle: { pipelined: memory, blocking: memory },
    checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage(), ...checkpointing },
    ...(exchangeMode === undefined ? {} : { exchangeMode }),
  });
}

/** The counts of 0…1999 by x % 7: the naive reference. */
const expected = Array.from({ length: 7 }, (_, k) => [k, Array.from({ length: 2000 }, (_, seq) => seq % 7).filter((x) => x === k).length]);
const counts = (collected: Record<string, unknown[]>): unknown[] => [...(collected['counts'] ?? [])].sort((a, b) => (a as [number])[0] - (b as [number])[0]);

describe("a checkpointed job's exchange mode", () => {
  it('is ALL_EDGES_PIPELINED when neither the job nor runJob names one', async () => {
    const result = await run(streamingJob());
    assert.equal(result.status, 'succeeded', result.error?.message);
    assert.equal(result.exchangeMode, 'ALL_EDGES_PIPELINED');
    assert.deepEqual(counts(result.collected), expected);
  });

  it("is the job's own when it names one: approximate, with at-least-once checkpoints", async () => {
    const result = await run(streamingJob('ALL_EDGES_PIPELINED_APPROXIMATE'));
    assert.equal(result.status, 'succeeded', result.error?.message);
    assert.equal(result.exchangeMode, 'ALL_EDGES_PIPELINED_APPROXIMATE');
    assert.equal(result.checkpoints?.mode, 'at-least-once');
    assert.deepEqual(counts(result.collected), expected);
  });

  it("refuses the job's own approximate mode with exactly-once checkpoints, naming both", async () => {
    await assert.rejects(run(streamingJob('ALL_EDGES_PIPELINED_APPROXIMATE'), { mode: 'exactly-once' }), (error: unknown) => isEngineError(error, 'WEFT_ERR_APPROXIMATE_REFUSED') && /exactly-once/.test(error.message));
  });

  it("refuses the job's own blocking mode, naming the blocking edge", async () => {
    await assert.rejects(run(streamingJob('ALL_EDGES_BLOCKING')), (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT') && /is BLOCKING: a checkpointed job's edges are all pipelined.*but the job runs ALL_EDGES_BLOCKING \(its own defineJob exchangeMode/.test(error.message));
  });

  it("is runJob's when it names one, over the job's own", async () => {
    const result = await run(streamingJob('ALL_EDGES_BLOCKING'), {}, 'ALL_EDGES_PIPELINED');
    assert.equal(result.status, 'succeeded', result.error?.message);
    assert.equal(result.exchangeMode, 'ALL_EDGES_PIPELINED');
  });
});
