// Partitions are released as the job goes, on the persisted blocking shuffle (a local directory + SQLite):
// terasort and word count run with one slot (one region at a time, so every region deployed before another
// has finished), and before each region is deployed the store directory is listed. A partition every
// consumer of which ran in an earlier region must be gone from it by then — while the job still runs —
// and every partition the region is about to read must still be there. Which partitions those are is
// worked out here from the job's topology (docs/DESIGN.md's POINTWISE expansion), not by the engine's code.
// With the release turned off, every partition stays until the job ends. In process and across processes
// (one worker process writes the objects, the job master releases them).
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import type { JobResult, JobTopology } from '@weft/engine';
import { runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { blockingShuffle, EXAMPLES } from './support/fault-runs.js';

/** The result partitions (`edge#i`) of the store's committed objects: `<job>/<partition>/<attempt>.<writeId>.wsm`. */
async function partitionsOnDisk(store: string): Promise<Set<string>> {
  const found = new Set<string>();
  let jobs: string[];
  try {
    jobs = await readdir(store);
  } catch {
    return found;
  }
  for (const job of jobs) {
    for (const partition of await readdir(join(store, job)).catch(() => [] as string[])) {
      const files = await readdir(join(store, job, partition)).catch(() => [] as string[]);
      if (files.some((f) => f.endsWith('.wsm'))) found.add(decodeURIComponent(partition));
    }
  }
  return found;
}

/** The producer and the consumer subtasks (`vertex#j`) of each result partition, by DESIGN.md's rules. */
function consumersOf(topology: JobTopology): Map<string, { producer: string; readers: string[] }> {
  const parallelism = new Map(topology.vertices.map((v) => [v.id, v.parallelism]));
  const out = new Map<string, { producer: string; readers: string[] }>();
  for (const e of topology.edges) {
    const id = e.id ?? `${e.source}->${e.target}`;
    const S = parallelism.get(e.source) as number;
    const T = parallelism.get(e.target) as number;
    for (let i = 0; i < S; i++) {
      const consumers: number[] = [];
      for (let j = 0; j < T; j++) {
        const reads = e.distribution === 'ALL_TO_ALL' || (S === T ? i === j : S > T ? Math.floor((j * S) / T) <= i && i < Math.floor(((j + 1) * S) / T) : Math.floor((i * T + S - 1) / S) <= j && j < Math.floor(((i + 1) * T + S - 1) / S));
        if (reads) consumers.push(j);
      }
      out.set(`${id}#${i}`, { producer: `${e.source}#${i}`, readers: consumers.map((j) => `${e.target}#${j}`) });
    }
  }
  return out;
}

interface Check {
  readonly deployments: number;
  /** Partitions found gone once their consumers had all run, while later regions were still to run. */
  readonly goneEarly: number;
  /** Partitions on disk when the last region was deployed. */
  readonly onDiskAtLast: number;
}

async function runChecked(example: (typeof EXAMPLES)[number], executor: 'inprocess' | 'workers', release: boolean): Promise<{ result: JobResult; check: Check }> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-release-'));
  try {
    const store = join(dir, 'store');
    const ran = new Set<string>();
    let deployments = 0;
    let goneEarly = 0;
    let onDiskAtLast = 0;
    let consumers = new Map<string, { producer: string; readers: string[] }>();
    let regionCount = 0;
    const problems: string[] = [];
    const result = await runJob({
      job: example.module,
      args: example.args(join(dir, 'out.txt')),
      parallelism: 3,
      executor,
      ...(executor === 'workers' ? { workers: 1 } : {}),
      slotsPerExecutor: 1,
      exchangeMode: 'ALL_EDGES_BLOCKING',
      shuffle: { pipelined: createMemoryShuffleServiceFactory(), blocking: blockingShuffle(dir) },
      cwd: dir,
      releasePartitionsDuringJob: release,
      faults: (context) => {
        consumers = consumersOf(context.topology);
        regionCount = context.regions.length;
        return {
          beforeDeploy: async (region) => {
            deployments++;
            const finished = [...consumers].filter(([, { readers }]) => readers.every((r) => ran.has(r))).map(([p]) => p);
            let onDisk = await partitionsOnDisk(store);
            // Releases are not awaited by the scheduler: give the ones under way a moment to land.
            for (let i = 0; release && i < 200 && finished.some((p) => onDisk.has(p)); i++) {
              await sleep(10);
              onDisk = await partitionsOnDisk(store);
            }
            for (const p of region.inputPartitions) if (!onDisk.has(p)) problems.push(`deployment ${deployments}: ${p}, an input, is gone`);
            if (release) {
              for (const p of finished) if (onDisk.has(p)) problems.push(`deployment ${deployments}: ${p} is still stored though its consumers all finished`);
              goneEarly = finished.length;
            } else {
              const produced = [...consumers].filter(([, { producer }]) => ran.has(producer)).map(([p]) => p);
              for (const p of produced) if (!onDisk.has(p)) problems.push(`deployment ${deployments}: ${p} is gone with the release turned off`);
            }
            if (deployments === regionCount) onDiskAtLast = onDisk.size;
            for (const task of region.tasks) ran.add(task.executionVertexId);
          },
        };
      },
    });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(problems, []);
    assert.equal(deployments, regionCount, 'one deployment per region (no failure)');
    assert.ok((await readFile(join(dir, 'out.txt'), 'utf8')).length > 0);
    assert.deepEqual([...(await partitionsOnDisk(store))], [], 'nothing left once the job ended');
    return { result, check: { deployments, goneEarly, onDiskAtLast } };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('partitions released as the job goes, on the local directory + SQLite', () => {
  for (const name of ['terasort', 'word-count']) {
    const example = EXAMPLES.find((e) => e.name === name) as (typeof EXAMPLES)[number];
    for (const executor of ['inprocess', 'workers'] as const) {
      it(`${name} (${executor}): a partition's object is gone once its consumers finished, while the job runs`, async () => {
        const { result, check } = await runChecked(example, executor, true);
        assert.ok(check.goneEarly > 0, `some partition was released before the last region ran: ${JSON.stringify(check)}`);
        const blocking = result.topology.edges.reduce((n, e) => n + (result.topology.vertices.find((v) => v.id === e.source)?.parallelism ?? 0), 0);
        assert.equal(result.partitionsReleasedDuringJob, blocking, 'every partition of the job is released once read');
        assert.ok(result.bytesReleasedDuringJob > 0);
      });
    }
    it(`${name}: with the release turned off, every partition stays until the job ends`, async () => {
      const { result, check } = await runChecked(example, 'inprocess', false);
      assert.equal(result.partitionsReleasedDuringJob, 0);
      assert.ok(check.onDiskAtLast > 0);
    });
  }
});
