// The Redis Stream two-phase-commit sink against a real redis-server: a streaming job whose tasks throw
// at seeded points appends each record to the stream exactly once; a transaction committed again adds
// nothing; an aborted or cancelled one leaves no entry and no staged records.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { defineJob, type FaultInjectorFactory, InMemoryCheckpointStorage, runJob, type TwoPhaseCommitSinkContext } from '@weft/engine';
import { redisStreamSink } from '@weft/job-store';
import { noopLogger } from '@weft/shuffle-api';
import { connectRedis } from '@weft/shuffle-remote/redis';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { type RedisServer, seededRandom, startRedis } from '@weft/testkit';

const lineOf = (seq: number): string => `line ${seq}`;
const context: TwoPhaseCommitSinkContext = { jobId: 'unit', operatorName: 'sinkTo', subtask: 0, parallelism: 1, attempt: 0, cwd: process.cwd(), fileSystems: [] };

const throwsAt = (faults: readonly { task: string; attempt: number; atRecord: number }[]): FaultInjectorFactory => () => ({
  taskFault: ({ executionVertexId, attempt }) => {
    const fault = faults.find((f) => f.task === executionVertexId && f.attempt === attempt);
    return fault === undefined ? undefined : { kind: 'throw', atRecord: fault.atRecord };
  },
});

describe('redis stream two-phase-commit sink', () => {
  let server: RedisServer;
  let redis: Awaited<ReturnType<typeof connectRedis>>;
  before(async () => {
    server = await startRedis({ persistent: false });
    redis = await connectRedis({ url: server.url, connectTimeoutMs: 5000, commandTimeoutMs: 5000, setting: 'test', logger: noopLogger });
  });
  after(async () => {
    await redis?.quit();
    await server?.close();
  });

  const entries = async (stream: string): Promise<string[]> => (await redis.xrange(stream, '-', '+')).map(([, fields]) => fields[1] as string);
  const staged = async (stream: string): Promise<string[]> => redis.keys(`${stream}:weft-2pc:txn:*`);

  it('commits a transaction once however often it is committed, and an aborted one adds nothing', async () => {
    const stream = 'unit-stream';
    const sink = redisStreamSink<string>({ url: server.url, stream })(context);
    try {
      const kept = await sink.beginTransaction();
      for (const v of ['a', 'b', 'c']) await sink.write(kept, v);
      const handle = await sink.preCommit(kept);
      const dropped = await sink.beginTransaction();
      await sink.write(dropped, 'x');
      await sink.preCommit(dropped);
      assert.deepEqual(await entries(stream), [], 'nothing is in the stream before the commit');
      await sink.commit(handle);
      // a re-commit (after a restore), by another instance, as another process would
      const other = redisStreamSink<string>({ url: server.url, stream })(context);
      try {
        await other.commit(JSON.parse(JSON.stringify(handle)));
      } finally {
        await other.close?.();
      }
      await sink.commit(handle);
      await sink.abort(dropped);
      assert.deepEqual(await entries(stream), ['a', 'b', 'c']);
      assert.deepEqual(await staged(stream), []);
    } finally {
      await sink.close?.();
    }
  });

  it("abortLingering of one subtask drops its own lingering transactions only, not those of an operator whose name extends it ('sink' 1 vs 'sink/1' 0)", async () => {
    const stream = 'lingering-stream';
    const of = (operatorName: string, subtask: number, attempt: number) => redisStreamSink<string>({ url: server.url, stream })({ ...context, jobId: 'J', operatorName, subtask, attempt });
    const stage = async (operatorName: string, subtask: number): Promise<void> => {
      const sink = of(operatorName, subtask, 0);
      try {
        const txn = await sink.beginTransaction();
        await sink.write(txn, `${operatorName}#${subtask}`);
        await sink.preCommit(txn);
      } finally {
        await sink.close?.();
      }
    };
    await stage('sink', 1);
    await stage('sink/1', 0);
    await stage('sink', 10);
    assert.equal((await staged(stream)).length, 3);
    // the restarted attempt of sink#1 (a restore that keeps no transaction of it)
    const restarted = of('sink', 1, 1);
    try {
      assert.equal(await restarted.abortLingering?.({ keep: [] }), 1);
    } finally {
      await restarted.close?.();
    }
    const left = await Promise.all((await staged(stream)).map((key) => redis.lrange(key, 0, -1)));
    assert.deepEqual(left.flat().sort(), ['sink#10', 'sink/1#0']);
    await redis.del(...(await staged(stream)));
  });

  it('a streaming job restored after throws at seeded points appends each record exactly once, as a fault-free run does', async () => {
    // 12,000 records at 20,000/s: each source task reaches its first fault 250-400 ms in, with a 15 ms
    // checkpoint interval, so checkpoints completed before it even on a loaded machine (the restore is what is tested)
    const count = 12_000;
    const job = (stream: string) =>
      defineJob((ctx) => {
        ctx.generate(lineOf, { count, splits: 8, ratePerSecond: 20_000 }).sinkTo(redisStreamSink<string>({ url: server.url, stream }));
      }, { name: 'redis-lines' });
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    const runOn = (stream: string, faults?: FaultInjectorFactory) =>
      runJob({ job: job(stream), parallelism: 2, shuffle: { pipelined: memory, blocking: memory }, checkpointing: { intervalMs: 15, storage: new InMemoryCheckpointStorage() }, restartStrategy: { type: 'fixed-delay', attempts: 3, delayMs: 0 }, ...(faults === undefined ? {} : { faults }) });
    const clean = await runOn('clean');
    assert.equal(clean.status, 'succeeded', clean.error?.message);
    const random = seededRandom(150);
    const faulty = await runOn('faulty', throwsAt([
      { task: 'generate#0', attempt: 0, atRecord: 2500 + Math.floor(random() * 1500) },
      { task: 'generate#1', attempt: 0, atRecord: 2500 + Math.floor(random() * 1500) },
      { task: 'generate#0', attempt: 1, atRecord: 1000 + Math.floor(random() * 400) },
    ]));
    assert.equal(faulty.status, 'succeeded', faulty.error?.message);
    assert.ok(faulty.failures >= 2 && (faulty.checkpoints?.tasksRestored ?? 0) > 0, `failures ${faulty.failures}, checkpoints ${JSON.stringify(faulty.checkpoints)}`);
    const expected = Array.from({ length: count }, (_, seq) => lineOf(seq)).sort();
    assert.deepEqual((await entries('clean')).sort(), expected);
    assert.deepEqual((await entries('faulty')).sort(), expected);
  });

  it('a cancelled job leaves no stream entry and nothing staged', async () => {
    const stream = 'cancelled';
    const controller = new AbortController();
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    let seen = 0;
    const job = defineJob((ctx) => {
      ctx
        .generate(lineOf, { count: 1_000_000, splits: 4 })
        .map((l) => {
          if (++seen === 5000) controller.abort(new Error('cancelled by the test'));
          return l;
        })
        .sinkTo(redisStreamSink<string>({ url: server.url, stream }));
    }, { name: 'redis-cancel' });
    const result = await runJob({ job, parallelism: 2, shuffle: { pipelined: memory, blocking: memory }, signal: controller.signal });
    assert.equal(result.status, 'failed');
    assert.ok(seen >= 5000);
    assert.deepEqual(await entries(stream), []);
    assert.deepEqual(await staged(stream), []);
  });
});
