import { defineJob, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
const WORDS = Array.from({ length: 3000 }, (_, i) => `w${(i * 7919) % 613}`);
const r = await runJob({
  job: defineJob((ctx) => {
    ctx.fromArray(WORDS).keyBy((w) => w).count().collect('counts');
  }),
  executor: 'inprocess', slotsPerExecutor: 2,
  shuffle: { pipelined: memory, blocking: memory },
  adaptive: { maxParallelism: 16, dataVolumePerTaskBytes: 2000, defaultSourceParallelism: 2 },
});
console.log(r.status, r.error?.stack, r.tasks, JSON.stringify(r.vertices, null, 0).slice(0, 2000));
console.log((r.collected['counts'] as unknown[]).length);
