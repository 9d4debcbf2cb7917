import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  computeDefaultMaxParallelism,
  computePipelinedRegions,
  defineJob,
  EXCHANGE_MODES,
  type ExchangeMode,
  isEngineError,
  type JobBuildFunction,
  type JobPlan,
  loadJob,
} from '@weft/engine';

async function plan(build: JobBuildFunction, parallelism = 2, exchangeMode?: ExchangeMode): Promise<JobPlan> {
  return (await loadJob({ job: defineJob(build), parallelism, ...(exchangeMode === undefined ? {} : { exchangeMode }) })).plan;
}

function invalidJob(pattern: RegExp): (error: unknown) => boolean {
  return (error) => isEngineError(error, 'WEFT_ERR_INVALID_JOB') && pattern.test((error as Error).message);
}

describe('job planning: chains', () => {
  it('fuses forward operators of equal parallelism into one job vertex, in chain order', async () => {
    const p = await plan((ctx) => ctx.range(0, 10, { name: 'src' }).map((x) => x + 1, { name: 'inc' }).filter((x) => x > 2).collect('out'));
    assert.equal(p.vertices.length, 1);
    assert.deepEqual(p.vertices[0]?.operators.map((o) => o.node.name), ['src', 'inc', 'filter', 'out']);
    assert.equal(p.vertices[0]?.name, 'src -> inc -> filter -> out');
    assert.deepEqual(p.edges, []);
    assert.deepEqual(p.topology.vertices, [{ id: 'src', parallelism: 2 }]);
  });

  it('makes storage-safe vertex ids of any operator name ("..", "/", "#", spaces), keeping the names for people', async () => {
    const p = await plan((ctx) =>
      ctx
        .range(0, 10, { name: 'read..all' })
        .keyBy((x) => x % 3)
        .count({ name: 'count / key #1' })
        .rebalance()
        .map((x) => x, { name: '...' })
        .collect('out'),
    );
    assert.deepEqual(p.topology.vertices.map((v) => v.id), ['read.all', 'count-key-1', 'map']);
    assert.deepEqual(p.vertices.map((v) => v.name.split(' -> ')[0]), ['read..all', 'count / key #1', '...']);
  });

  it('cuts the chain where parallelism changes (rebalance, all-to-all) or chaining is off (forward, pointwise)', async () => {
    const p = await plan((ctx) =>
      ctx
        .range(0, 10, { name: 'src' })
        .map((x) => x, { name: 'wide', parallelism: 3 })
        .map((x) => x, { name: 'alone', parallelism: 3, chaining: false })
        .collect('out'),
    );
    assert.deepEqual(p.vertices.map((v) => [v.id, v.parallelism]), [['src', 2], ['wide', 3], ['alone', 3]]);
    assert.deepEqual(p.edges.map((e) => [e.id, e.partitioning.type, e.distribution]), [
      ['src->wide', 'rebalance', 'ALL_TO_ALL'],
      ['wide->alone', 'forward', 'POINTWISE'],
    ]);
  });

  it('plans keyBy().count() as a combiner chained to the producer and a hash edge with default key groups', async () => {
    const p = await plan((ctx) => ctx.range(0, 10, { name: 'src' }).keyBy((x) => x % 3).count({ name: 'count', parallelism: 5 }).collect('out'));
    assert.deepEqual(p.vertices.map((v) => v.operators.map((o) => o.node.spec.kind)), [['range-source', 'combine'], ['aggregate', 'collect-sink']]);
    const edge = p.edges[0];
    assert.equal(edge?.partitioning.type, 'hash');
    assert.equal(edge?.distribution, 'ALL_TO_ALL');
    assert.equal(edge?.maxParallelism, computeDefaultMaxParallelism(5));
  });

  it('drops operators that feed no sink', async () => {
    const p = await plan((ctx) => {
      const source = ctx.range(0, 10, { name: 'src' });
      source.map((x) => x * 2, { name: 'unused', parallelism: 7 });
      source.collect('out');
    });
    assert.deepEqual(p.vertices.map((v) => v.id), ['src']);
  });
});

describe('job planning: exchange modes', () => {
  // src(2) -forward, unchained-> fwd(2) -rescale-> rsc(4) -rebalance-> all(3), sink chained
  const shaped: JobBuildFunction = (ctx) =>
    ctx
      .range(0, 100, { name: 'src' })
      .map((x) => x, { name: 'fwd', chaining: false })
      .rescale()
      .map((x) => x, { name: 'rsc', parallelism: 4 })
      .map((x) => x, { name: 'all', parallelism: 3 })
      .collect('out');

  it('maps each mode to partition types as Flink does, and regions follow', async () => {
    const expected: Record<ExchangeMode, [string, string, string]> = {
      ALL_EDGES_BLOCKING: ['BLOCKING', 'BLOCKING', 'BLOCKING'],
      FORWARD_EDGES_PIPELINED: ['PIPELINED_BOUNDED', 'BLOCKING', 'BLOCKING'],
      POINTWISE_EDGES_PIPELINED: ['PIPELINED_BOUNDED', 'PIPELINED_BOUNDED', 'BLOCKING'],
      ALL_EDGES_PIPELINED: ['PIPELINED_BOUNDED', 'PIPELINED_BOUNDED', 'PIPELINED_BOUNDED'],
      ALL_EDGES_PIPELINED_APPROXIMATE: ['PIPELINED_APPROXIMATE', 'PIPELINED_APPROXIMATE', 'PIPELINED_APPROXIMATE'],
    };
    const regionCounts: Record<ExchangeMode, number> = { ALL_EDGES_BLOCKING: 11, FORWARD_EDGES_PIPELINED: 9, POINTWISE_EDGES_PIPELINED: 5, ALL_EDGES_PIPELINED: 1, ALL_EDGES_PIPELINED_APPROXIMATE: 11 };
    for (const mode of EXCHANGE_MODES) {
      const p = await plan(shaped, 2, mode);
      assert.deepEqual(p.edges.map((e) => e.partitionType), expected[mode], mode);
      assert.deepEqual(p.edges.map((e) => e.distribution), ['POINTWISE', 'POINTWISE', 'ALL_TO_ALL']);
      assert.equal(computePipelinedRegions(p.topology).length, regionCounts[mode], mode);
    }
  });

  it('lets a per-edge override win over the mode', async () => {
    const p = await plan((ctx) => ctx.range(0, 10, { name: 'src' }).exchange('PIPELINED').map((x) => x, { name: 'm', parallelism: 3 }).rebalance().exchange('BLOCKING').map((x) => x, { name: 'n' }).collect('out'), 2, 'ALL_EDGES_PIPELINED');
    assert.deepEqual(p.edges.map((e) => [e.id, e.partitionType]), [['src->m', 'PIPELINED'], ['m->n', 'BLOCKING']]);
  });

  it("takes the job's own exchange mode unless the runner overrides it", async () => {
    const job = defineJob((ctx) => ctx.range(0, 10).map((x) => x, { parallelism: 3 }).collect('out'), { exchangeMode: 'ALL_EDGES_PIPELINED' });
    assert.equal((await loadJob({ job, parallelism: 2 })).plan.edges[0]?.partitionType, 'PIPELINED_BOUNDED');
    assert.equal((await loadJob({ job, parallelism: 2, exchangeMode: 'ALL_EDGES_BLOCKING' })).plan.edges[0]?.partitionType, 'BLOCKING');
  });
});

describe('job planning: bad jobs', () => {
  it('refuses a parallelism below 1 or not an integer, naming the operator and the field', async () => {
    await assert.rejects(plan((ctx) => ctx.range(0, 10).map((x) => x, { name: 'tokenize', parallelism: 0 }).collect('out')), invalidJob(/operator "tokenize" \(map\): parallelism: expected an integer >= 1, got 0/));
    await assert.rejects(plan((ctx) => ctx.range(0, 10, { parallelism: 1.5 }).collect('out')), invalidJob(/operator "range" \(range-source\): parallelism/));
    await assert.rejects(loadJob({ job: defineJob((ctx) => ctx.range(0, 1).collect('x')), parallelism: 0 }), invalidJob(/parallelism: expected an integer >= 1/));
  });

  it('refuses unknown exchange modes and edge exchanges, naming the field', async () => {
    assert.throws(() => defineJob(() => {}, { exchangeMode: 'SOMETIMES' as ExchangeMode }), invalidJob(/exchangeMode: unknown exchange mode "SOMETIMES"/));
    await assert.rejects(loadJob({ job: defineJob((ctx) => ctx.range(0, 1).collect('x')), parallelism: 1, exchangeMode: 'NOPE' as ExchangeMode }), invalidJob(/exchangeMode/));
    await assert.rejects(plan((ctx) => ctx.range(0, 1).exchange('HYBRID' as 'BLOCKING').collect('x')), invalidJob(/exchange: unknown exchange "HYBRID"/));
  });

  it('refuses a job without a sink, two sinks on one path, too few key groups, and non-functions', async () => {
    await assert.rejects(plan((ctx) => void ctx.range(0, 10).map((x) => x)), invalidJob(/no sink/));
    await assert.rejects(plan((ctx) => { const s = ctx.range(0, 1); s.writeText('out.txt', { name: 'a' }); s.writeText('out.txt', { name: 'b' }); }), invalidJob(/"out.txt" is also written by operator "a"/));
    await assert.rejects(plan((ctx) => ctx.range(0, 10).keyBy((x) => x, { maxParallelism: 2 }).count({ parallelism: 4 }).collect('c')), invalidJob(/more than the key groups/));
    await assert.rejects(plan((ctx) => ctx.range(0, 10).map(42 as never).collect('c')), invalidJob(/\(map\): function: expected a function, got number/));
    assert.throws(() => defineJob('nope' as never), invalidJob(/defineJob: build/));
  });

  it('reports a build function that throws, and a module without a defineJob default export', async () => {
    await assert.rejects(plan(() => { throw new Error('no config'); }), invalidJob(/build function of job "job" threw: no config/));
    const dir = await mkdtemp(join(tmpdir(), 'weft-plan-'));
    try {
      await writeFile(join(dir, 'not-a-job.mjs'), 'export default 42;\n');
      await assert.rejects(loadJob({ job: join(dir, 'not-a-job.mjs'), parallelism: 1 }), invalidJob(/no default export made by defineJob/));
      await assert.rejects(loadJob({ job: join(dir, 'missing.mjs'), parallelism: 1 }), invalidJob(/cannot load job module/));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
