// ctx.watchDirectory: an unbounded source over a directory's files. In process over the in-memory pipelined
// shuffle: files there at the start and files renamed in while the job runs, counted by line in keyed
// state and compared with a naive reader (the files read in plain JS); a source task that throws mid-file
// restarts from the latest completed checkpoint without a line twice or a line lost; the operator itself
// snapshotted mid-file at parallelism 2 and restored at 3; a missing directory refused before anything runs.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTempDir } from '@weft/testkit';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import {
  type CheckpointingOptions,
  defineJob,
  directoryFileOwner,
  type FaultInjectorFactory,
  InMemoryCheckpointStorage,
  InMemoryCheckpointStore,
  isEngineError,
  isVisibleInputName,
  type JobResult,
  runJob,
} from '../src/index.js';
import { DirectorySource } from '../src/operators/directory-source.js';
import { OperatorStateHolder } from '../src/runtime/operator-state-holder.js';
import { CollectingOutput, testingOperatorContext } from './support/operator-context.js';

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'];

/** File `name`'s text: `lines` lines, some repeated across files, `\r\n` in odd files, no final newline in every third. */
function fileText(index: number, lines: number): string {
  const eol = index % 2 === 1 ? '\r\n' : '\n';
  const body = Array.from({ length: lines }, (_, j) => `${WORDS[(index * 7 + j) % WORDS.length]} ${j % 13}`).join(eol);
  return index % 3 === 0 ? body : body + eol;
}

/** Writes a file as a producer should: elsewhere (a `.tmp` name), then renamed in. */
async function publish(dir: string, name: string, text: string): Promise<void> {
  await writeFile(join(dir, `${name}.tmp`), text);
  await rename(join(dir, `${name}.tmp`), join(dir, name));
}

/** The naive reference: every visible file of `dir` split into lines in plain JS, counted. */
function referenceCounts(dir: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const name of readdirSync(dir).filter(isVisibleInputName)) {
    const text = readFileSync(join(dir, name), 'utf8');
    const lines = text.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
    if (lines.at(-1) === '') lines.pop();
    for (const line of lines) counts.set(line, (counts.get(line) ?? 0) + 1);
  }
  return counts;
}

function countsOf(result: JobResult): Map<string, number> {
  assert.equal(result.status, 'succeeded', result.error?.message);
  return new Map((result.collected['counts'] ?? []) as [string, number][]);
}

async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 5));
}

function lineCountJob(dir: string, seen: { lines: number }) {
  return defineJob((ctx) => {
    ctx
      .watchDirectory(dir, { pollIntervalMs: 10, endMarker: '_DONE' })
      .map((line) => {
        seen.lines++;
        return line;
      })
      .keyBy((line) => line)
      .count()
      .collect('counts');
  }, { name: 'directory-line-count' });
}

function run(request: { dir: string; seen: { lines: number }; parallelism: number; checkpointing: CheckpointingOptions; faults?: FaultInjectorFactory }): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  return runJob({
    job: lineCountJob(request.dir, request.seen),
    parallelism: request.parallelism,
    shuffle: { pipelined: memory, blocking: memory },
    checkpointing: request.checkpointing,
    restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 0 },
    ...(request.faults === undefined ? {} : { faults: request.faults }),
  });
}

/** Broken code fails a test instead of hanging it (not a timing assertion: a healthy run takes a few seconds at most). */
const GUARD_MS = 60_000;

describe('ctx.watchDirectory', () => {
  it('reads the files there at the start, then the files renamed in while it runs, as a naive reader does', { timeout: GUARD_MS }, async () => {
    await using temp = await createTempDir('weft-watch-');
    const dir = join(temp.path, 'in');
    await mkdir(dir);
    for (let i = 0; i < 4; i++) await publish(dir, `part-${i}.txt`, fileText(i, 40 + i));
    const seen = { lines: 0 };
    const running = run({ dir, seen, parallelism: 2, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() } });
    await until(() => seen.lines >= 40 + 41 + 42 + 43);
    // files that appear while it runs, and names that must never be read: in progress, hidden
    for (let i = 4; i < 8; i++) await publish(dir, `part-${i}.txt`, fileText(i, 30 + i));
    await writeFile(join(dir, 'part-9.txt.tmp'), 'half written\n');
    await writeFile(join(dir, '_part-10.txt'), 'in progress\n');
    await writeFile(join(dir, '.part-11.txt'), 'hidden\n');
    await writeFile(join(dir, '_DONE'), '');
    const result = await running;
    assert.deepEqual(countsOf(result), referenceCounts(dir));
    assert.ok(referenceCounts(dir).size > 0 && !referenceCounts(dir).has('half written'));
  });

  it('restarts a source that failed mid-file from the latest completed checkpoint: no line twice, none lost', { timeout: GUARD_MS }, async () => {
    await using temp = await createTempDir('weft-watch-');
    const dir = join(temp.path, 'in');
    await mkdir(dir);
    const names = Array.from({ length: 6 }, (_, i) => `a-${i}.txt`);
    for (const [i, name] of names.entries()) await publish(dir, name, fileText(i, 50));
    const firstLines = names.filter((n) => directoryFileOwner(n, 2) === 0).length * 50;
    assert.ok(firstLines > 0);
    const store = new InMemoryCheckpointStore();
    const seen = { lines: 0 };
    // subtask 0 throws in the middle of the files that come second (long ones, read across several checkpoints)
    const faults: FaultInjectorFactory = () => ({
      taskFault: ({ executionVertexId, attempt }) => (executionVertexId === 'watchDirectory#0' && attempt === 0 ? { kind: 'throw', atRecord: firstLines + 1500 } : undefined),
    });
    const running = run({ dir, seen, parallelism: 2, checkpointing: { intervalMs: 10, storage: new InMemoryCheckpointStorage(), store }, faults });
    await until(() => seen.lines >= 6 * 50);
    const before = (await store.completed()).at(-1)?.checkpointId ?? 0;
    await until(async () => ((await store.completed()).at(-1)?.checkpointId ?? 0) > before);
    const second = Array.from({ length: 8 }, (_, i) => `b-${i}.txt`);
    assert.ok(second.filter((n) => directoryFileOwner(n, 2) === 0).length * 800 > 1500);
    for (const [i, name] of second.entries()) await publish(dir, name, fileText(i + 6, 800));
    await writeFile(join(dir, '_DONE'), '');
    const result = await running;
    assert.deepEqual(countsOf(result), referenceCounts(dir));
    assert.equal(result.failures, 1);
    assert.ok((result.checkpoints?.tasksRestored ?? 0) > 0, `checkpoints: ${JSON.stringify(result.checkpoints)}`);
  });

  it('resumes at the exact line of a file it was reading when restored with another parallelism (2 -> 3)', { timeout: GUARD_MS }, async () => {
    await using temp = await createTempDir('weft-watch-');
    const dir = join(temp.path, 'in');
    await mkdir(dir);
    for (let i = 0; i < 7; i++) await publish(dir, `f-${i}.txt`, fileText(i, 120));
    await writeFile(join(dir, '_DONE'), '');
    const emitted: string[] = [];
    const snapshots: Uint8Array[] = [];
    for (let subtask = 0; subtask < 2; subtask++) {
      // a snapshot taken after this subtask's 130th line (mid-file), then a failure
      const holder = new OperatorStateHolder({ operator: 'watch', subtask, parallelism: 2, maxParallelism: undefined, restored: undefined });
      const stop = new Error('failed after the snapshot');
      let n = 0;
      const source: DirectorySource = new DirectorySource(
        { path: dir, pollIntervalMs: 10, endMarker: '_DONE' },
        {
          collect(value) {
            emitted.push(value as string);
            if (++n === 130) {
              source.snapshotState();
              snapshots.push(holder.snapshot().operator as Uint8Array);
              throw stop;
            }
          },
        },
        { ...testingOperatorContext({ budgetBytes: 1 << 20, spillDir: temp.path, name: 'watch' }), subtask, parallelism: 2, state: holder },
      );
      await assert.rejects(source.run(), (error) => error === stop);
    }
    assert.equal(snapshots.length, 2);
    for (let subtask = 0; subtask < 3; subtask++) {
      const holder = new OperatorStateHolder({ operator: 'watch', subtask, parallelism: 3, maxParallelism: undefined, restored: { keyed: [], operator: snapshots } });
      const output = new CollectingOutput();
      const source = new DirectorySource({ path: dir, pollIntervalMs: 10, endMarker: '_DONE' }, output, { ...testingOperatorContext({ budgetBytes: 1 << 20, spillDir: temp.path, name: 'watch' }), subtask, parallelism: 3, state: holder });
      await source.run();
      emitted.push(...(output.values as string[]));
    }
    const counts = new Map<string, number>();
    for (const line of emitted) counts.set(line, (counts.get(line) ?? 0) + 1);
    assert.deepEqual(counts, referenceCounts(dir));
  });

  it('refuses a missing directory, or a file, before anything runs (WEFT_ERR_INPUT_UNREADABLE naming it)', { timeout: GUARD_MS }, async () => {
    await using temp = await createTempDir('weft-watch-');
    const missing = join(temp.path, 'nowhere');
    const refused = await run({ dir: missing, seen: { lines: 0 }, parallelism: 1, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() } }).catch((error: unknown) => error);
    assert.ok(isEngineError(refused, 'WEFT_ERR_INPUT_UNREADABLE'), String(refused));
    assert.match((refused as Error).message, new RegExp(`operator "watchDirectory" cannot read ${missing}: no such file or directory`));
    const file = join(temp.path, 'a-file.txt');
    await writeFile(file, 'x\n');
    const notDir = await run({ dir: file, seen: { lines: 0 }, parallelism: 1, checkpointing: { intervalMs: 20, storage: new InMemoryCheckpointStorage() } }).catch((error: unknown) => error);
    assert.ok(isEngineError(notDir, 'WEFT_ERR_INPUT_UNREADABLE'), String(notDir));
    assert.match((notDir as Error).message, /not a directory/);
  });

  it('refuses bad source options before anything runs, naming the operator and the option', async () => {
    await using temp = await createTempDir('weft-watch-');
    // (a directory that ends at once: an option accepted by mistake shows as a job that succeeds, not one that hangs)
    await writeFile(join(temp.path, '_DONE'), '');
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    const refusal = async (build: Parameters<typeof defineJob>[0]): Promise<unknown> =>
      runJob({ job: defineJob(build, { name: 'bad' }), parallelism: 1, shuffle: { pipelined: memory, blocking: memory } }).catch((error: unknown) => error);
    const cases: [Parameters<typeof defineJob>[0], RegExp][] = [
      [(ctx) => ctx.watchDirectory(temp.path, { endMarker: '_DONE', pollIntervalMS: 5 } as never).collect('x'), /operator "watchDirectory" \(directory-source\): pollIntervalMS: unknown option/],
      [(ctx) => ctx.watchDirectory(temp.path, { endMarker: '_DONE', pollIntervalMs: 0 }).collect('x'), /pollIntervalMs: expected a number > 0, got 0/],
      [(ctx) => ctx.watchDirectory('s3://bucket/in').collect('x'), /path: a local directory only/],
      [(ctx) => ctx.readRedisStream('localhost:6379', 'events').collect('x'), /operator "readRedisStream" \(stream-source\): url: expected a redis:\/\/ URL/],
      [(ctx) => ctx.readRedisStream('redis://127.0.0.1:6379/0', 'events', { startId: '>' as never }).collect('x'), /startId: expected '0' or '\$'/],
      [(ctx) => ctx.readRedisStream('redis://127.0.0.1:6379/0', 'events', { count: 3 } as never).collect('x'), /count: unknown option/],
    ];
    for (const [build, message] of cases) {
      const error = await refusal(build);
      assert.ok(isEngineError(error, 'WEFT_ERR_INVALID_JOB'), String(error));
      assert.match((error as Error).message, message);
    }
  });
});
