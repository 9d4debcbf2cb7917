// Planning for `--parallelism auto` (loadJob with `adaptive`): which vertices are decided at run time,
// how big they are planned, their edges, and the jobs refused.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, isEngineError, type JobBuildFunction, loadJob, resolveAdaptiveBatchOptions } from '@weft/engine';

const options = resolveAdaptiveBatchOptions({ maxParallelism: 32, dataVolumePerTaskBytes: 1000, defaultSourceParallelism: 3 });

async function plan(build: JobBuildFunction, cwd = process.cwd()) {
  return (await loadJob({ job: defineJob(build), parallelism: 4, cwd, exchangeMode: 'ALL_EDGES_PIPELINED', adaptive: { options } })).plan;
}

describe('adaptive planning', () => {
  it('sizes text sources from their files, keeps explicit parallelism, plans undecided vertices at the max, and makes their edges BLOCKING', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-adaptive-plan-'));
    try {
      await writeFile(join(dir, 'in.txt'), 'x'.repeat(4500));
      const p = await plan((ctx) => {
        const lines = ctx.readTextFile(join(dir, 'in.txt'), { name: 'read' });
        const counts = lines.keyBy((l) => l).count({ name: 'count' });
        counts.writeText(join(dir, 'out.txt'), { name: 'write' });
        counts.keyBy(() => 0).count({ name: 'total', parallelism: 1 }).collect('total');
        counts.sortBy(([l]) => l, { name: 'sort' }).collect('sorted');
      }, dir);
      const v = new Map(p.vertices.map((x) => [x.id, x]));
      assert.equal(v.get('read')?.parallelism, 5, 'ceil(4500 / 1000)');
      assert.equal(v.get('read')?.adaptive, undefined);
      assert.deepEqual(v.get('count')?.adaptive, { mode: 'decide' });
      assert.equal(v.get('count')?.parallelism, 32, 'planned at its reserved size');
      assert.ok(v.get('count')?.name.includes('write'), 'a sink without a parallelism chains with its producer');
      assert.equal(v.get('total')?.parallelism, 1);
      assert.equal(v.get('total')?.adaptive, undefined);
      assert.equal(v.get('sort-assign')?.adaptive?.mode, 'follow', 'a forward group follows its decided producer');
      assert.deepEqual(v.get('sort')?.adaptive, { mode: 'decide' }, "sortBy's ranges are decided at run time like any all-to-all consumer");
      assert.equal(v.get('sort')?.parallelism, 32, 'planned at its reserved size: one key range per subpartition');
      for (const e of p.edges) {
        const touches = p.vertices[e.source]?.adaptive !== undefined || p.vertices[e.target]?.adaptive !== undefined;
        if (touches) assert.equal(e.partitionType, 'BLOCKING', `${e.id}: its producers must finish before the decision`);
      }
      assert.equal(p.edges.find((e) => e.id === 'read->count')?.maxParallelism, 32, 'the key groups of an undecided consumer: its reserved size');
      assert.deepEqual(p.adaptive?.presets, { [p.logical.nodes.find((n) => n.name === 'read')?.uid as string]: 5 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('plans the same fingerprint from the presets a worker is given', async () => {
    const build: JobBuildFunction = (ctx) => ctx.range(0, 100, { name: 'numbers' }).keyBy((n) => n % 7).count({ name: 'count' }).collect('c');
    const master = (await loadJob({ job: defineJob(build), parallelism: 4, adaptive: { options } })).plan;
    assert.equal(master.vertices[0]?.parallelism, 3, 'a generated source: defaultSourceParallelism');
    const worker = (await loadJob({ job: defineJob(build), parallelism: 4, checkInputs: false, adaptive: master.adaptive as NonNullable<typeof master.adaptive> })).plan;
    assert.equal(worker.fingerprint, master.fingerprint);
    const fixed = (await loadJob({ job: defineJob(build), parallelism: 4 })).plan;
    assert.notEqual(fixed.fingerprint, master.fingerprint);
  });

  it('refuses rescale() and a pipelined exchange next to an operator decided at run time, naming the operator', async () => {
    const refused = async (build: JobBuildFunction, pattern: RegExp): Promise<void> => {
      await assert.rejects(plan(build), (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_JOB') && pattern.test(error.message));
    };
    await refused((ctx) => ctx.range(0, 10).keyBy((n) => n).count({ name: 'count' }).rescale().map((x) => x, { name: 'after' }).collect('x'), /operator "after" \(map\): parallelism: rescale\(\) needs fixed parallelisms/);
    await refused((ctx) => ctx.range(0, 10).keyBy((n) => n).count({ name: 'count' }).exchange('PIPELINED').map((x) => x, { name: 'after', parallelism: 2 }).collect('x'), /operator "after" \(map\): exchange: PIPELINED cannot feed or leave an operator whose parallelism is decided at run time/);
  });
});
