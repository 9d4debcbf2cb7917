import { strict as assert } from 'node:assert';
import { it } from 'node:test';
import type { ResultPartitionType } from '../result-partition-type.js';
import type { ResultPartitionWriter } from '../result-partition-writer.js';
import type { ShuffleDescriptor } from '../shuffle-descriptor.js';
import { isShuffleError } from '../shuffle-error.js';
import { jobId as toJobId } from '../ids.js';
import type { ConformanceHarness } from './harness.js';
import { drain, emitAll, makeRecord, parseRecord, recordsOf, registerPartition, rejectionOf } from './exchange-helpers.js';
import { type SuiteContext, assertShuffleError, isPipelined, isReconsumable, uniqueJobId } from './suite-context.js';

/** `count` records tagged with `attempt` (as their producer field), round robin over 2 subpartitions. */
function attemptRecords(attempt: number, from: number, count: number): { subpartition: number; record: Uint8Array }[] {
  return Array.from({ length: count }, (_, i) => ({ subpartition: (from + i) % 2, record: makeRecord(attempt, (from + i) % 2, from + i, 40) }));
}

/** Writes `count` records tagged with the descriptor's attempt and finishes. */
async function writeAttempt(h: ConformanceHarness, descriptor: ShuffleDescriptor, count: number): Promise<void> {
  const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
  try {
    await emitAll(writer, attemptRecords(descriptor.producer.attempt, 0, count));
    await writer.finish();
  } finally {
    await writer.close();
  }
}

/** Reads both subpartitions of `descriptor` to the end: the attempt tag of every record, and how many were intact. */
async function readAttempts(h: ConformanceHarness, descriptor: ShuffleDescriptor): Promise<{ attempts: Set<number>; records: number; intact: number }> {
  const gate = await h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } });
  try {
    const parsed = (await drain(gate)).flatMap((items) => recordsOf(items).map(parseRecord));
    return { attempts: new Set(parsed.map((r) => r.producer)), records: parsed.length, intact: parsed.filter((r) => r.intact).length };
  } finally {
    await gate.close();
  }
}

/** Runs `body` (emits and finish() of a writer that should be refused); its rejection, or undefined when it succeeded. */
async function outcomeOf(body: () => Promise<void>): Promise<unknown> {
  try {
    await body();
    return undefined;
  } catch (error) {
    return error;
  }
}

/** Rejects unless `promise` rejects; works for methods that throw synchronously too. */
function rejection(call: () => Promise<unknown>): Promise<unknown> {
  return rejectionOf((async () => call())());
}

const STALE_CODES = new Set(['SHF_ERR_COMMIT_CONFLICT', 'SHF_ERR_FENCED']);

/**
 * The attempt contract a resuming or restarting engine relies on: attempts other than 0, a new attempt
 * replacing an old one (with or without a release in between), a stale attempt's late commit refused,
 * fencing by job master epoch, the listing a new master sees, and close().
 */
export function attemptCases(ctx: SuiteContext, type: ResultPartitionType): void {
  const { timeoutMs } = ctx.options;

  it('writes and reads a partition whose producer is attempt 3', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const descriptor = await registerPartition(h.master, { jobId: uniqueJobId('attempt3'), resultId: 'a3', index: 0, type, subpartitions: 2, attempt: 3 });
      assert.equal(descriptor.producer.attempt, 3, 'the descriptor names the registered attempt');
      const [, read] = isPipelined(type)
        ? await Promise.all([writeAttempt(h, descriptor, 300), readAttempts(h, descriptor)])
        : [await writeAttempt(h, descriptor, 300), await readAttempts(h, descriptor)];
      assert.deepEqual([read.records, read.intact, [...read.attempts]], [300, 300, [3]]);
      if (isReconsumable(type)) {
        const listed = await h.master.listPartitions(descriptor.jobId);
        assert.deepEqual(listed.map((p) => [p.descriptor.partition.partitionId, p.descriptor.producer.attempt]), [[descriptor.partition.partitionId, 3]]);
      }
    }),
  );

  it('refuses a registration with a job master epoch older than one it has seen for the job (SHF_ERR_FENCED)', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const jobId = uniqueJobId('epoch-register');
      await registerPartition(h.master, { jobId, resultId: 'ep', index: 0, type, subpartitions: 2, epoch: 2 });
      const error = await rejection(() => registerPartition(h.master, { jobId, resultId: 'ep', index: 1, type, subpartitions: 2, epoch: 1 }));
      assertShuffleError(error, 'SHF_ERR_FENCED');
      assert.equal(error.retryable, false);
      // the same epoch, a newer one, and another job are not fenced
      await registerPartition(h.master, { jobId, resultId: 'ep', index: 1, type, subpartitions: 2, epoch: 2 });
      await registerPartition(h.master, { jobId, resultId: 'ep', index: 2, type, subpartitions: 2, epoch: 3 });
      await registerPartition(h.master, { jobId: uniqueJobId('epoch-other'), resultId: 'ep', index: 0, type, subpartitions: 2, epoch: 1 });
    }),
  );

  if (isReconsumable(type)) {
    for (const release of [true, false]) {
      it(
        release
          ? "replaces a released attempt with the producer's next one: consumers read only attempt 1's records"
          : "replaces a committed attempt registered again for attempt 1 without a release: consumers read only attempt 1's records",
        { timeout: timeoutMs },
        () =>
          ctx.withHarness(async (h) => {
            const spec = { jobId: uniqueJobId(`restart-${release}`), resultId: 'rs', index: 0, type, subpartitions: 2 };
            const first = await registerPartition(h.master, { ...spec, attempt: 0 });
            await writeAttempt(h, first, 100);
            if (release) await h.master.releasePartitionExternally(first);
            const second = await registerPartition(h.master, { ...spec, attempt: 1 });
            assert.equal(second.producer.attempt, 1);
            await writeAttempt(h, second, 60);
            const read = await readAttempts(h, second);
            assert.deepEqual([read.records, read.intact, [...read.attempts]], [60, 60, [1]], "only attempt 1's records may be visible");
            const listed = await h.master.listPartitions(second.jobId);
            assert.deepEqual(listed.map((p) => p.descriptor.producer.attempt), [1], 'the listing names the attempt that replaced the old one');
          }),
      );

      it(
        release
          ? "refuses the late commit of an attempt whose partition was released and registered for attempt 1; its records are never visible"
          : 'refuses the late commit of an attempt once attempt 1 is registered (no release in between); its records are never visible',
        { timeout: timeoutMs },
        () =>
          ctx.withHarness(async (h) => {
            const spec = { jobId: uniqueJobId(`stale-${release}`), resultId: 'st', index: 0, type, subpartitions: 2 };
            const old = await registerPartition(h.master, { ...spec, attempt: 0 });
            const oldWriter = await h.producerEnvironment.createResultPartitionWriter({ descriptor: old });
            try {
              await emitAll(oldWriter, attemptRecords(0, 0, 50));
              if (release) await h.master.releasePartitionExternally(old);
              const current = await registerPartition(h.master, { ...spec, attempt: 1 });
              // attempt 0 is still alive and finishes first: first committer must not win here
              const error = await outcomeOf(async () => {
                await emitAll(oldWriter, attemptRecords(0, 50, 50));
                await oldWriter.finish();
              });
              assert.ok(error !== undefined, "a stale attempt's finish() committed after a newer attempt was registered");
              assert.ok(
                isShuffleError(error) && STALE_CODES.has(error.code),
                `a stale attempt's commit must be refused with SHF_ERR_COMMIT_CONFLICT or SHF_ERR_FENCED, got ${String(error)}`,
              );
              assert.deepEqual(await h.master.listPartitions(current.jobId), [], "a stale attempt's refused commit must not be listed");
              await writeAttempt(h, current, 30);
              const read = await readAttempts(h, current);
              assert.deepEqual([read.records, [...read.attempts]], [30, [1]], "only attempt 1's records may be visible");
            } finally {
              await oldWriter.close();
            }
          }),
      );
    }

    it('refuses the commit of a partition registered under epoch 1 once epoch 2 registered in the job (SHF_ERR_FENCED)', { timeout: timeoutMs }, () =>
      ctx.withHarness(async (h) => {
        const jobId = uniqueJobId('epoch-commit');
        const stale = await registerPartition(h.master, { jobId, resultId: 'ec', index: 0, type, subpartitions: 2, epoch: 1 });
        const kept = await registerPartition(h.master, { jobId, resultId: 'ec', index: 1, type, subpartitions: 2, epoch: 1 });
        await writeAttempt(h, kept, 20);
        const writer: ResultPartitionWriter = await h.producerEnvironment.createResultPartitionWriter({ descriptor: stale });
        try {
          await emitAll(writer, attemptRecords(0, 0, 40));
          // a new job master run takes over and registers (another partition of) the job
          const newer = await registerPartition(h.master, { jobId, resultId: 'ec', index: 2, type, subpartitions: 2, epoch: 2 });
          const error = await outcomeOf(() => writer.finish());
          assertShuffleError(error, 'SHF_ERR_FENCED');
          await writeAttempt(h, newer, 10);
          const listed = (await h.master.listPartitions(stale.jobId)).map((p) => p.descriptor.partition.partitionId).sort();
          // what epoch 1 committed before epoch 2 arrived stays: a resuming master reuses it
          assert.deepEqual(listed, [kept.partition.partitionId, newer.partition.partitionId].sort());
        } finally {
          await writer.close();
        }
      }),
    );

    it("refuses an old master's release and unregisterJob once a newer epoch registered the job (SHF_ERR_FENCED), deleting nothing", { timeout: timeoutMs }, async (t) => {
      await ctx.withHarness(async (h) => {
        if (h.createMaster === undefined) {
          t.skip('the harness cannot create a second master on the same backends');
          return;
        }
        const jobId = uniqueJobId('epoch-release');
        await h.master.registerJob({ jobId: toJobId(jobId), epoch: 1 });
        const a = await registerPartition(h.master, { jobId, resultId: 'er', index: 0, type, subpartitions: 2, epoch: 1 });
        const b = await registerPartition(h.master, { jobId, resultId: 'er', index: 1, type, subpartitions: 2, epoch: 1 });
        await writeAttempt(h, a, 50);
        await writeAttempt(h, b, 20);
        // the old master's own releases work while it is the newest
        const own = await registerPartition(h.master, { jobId, resultId: 'er', index: 2, type, subpartitions: 2, epoch: 1 });
        await h.master.releasePartitionExternally(own);
        // a new job master run takes over the job on the same backends
        const newer = await h.createMaster();
        await newer.registerJob({ jobId: a.jobId, epoch: 2 });
        for (const [name, call] of [
          ['releasePartitionExternally', () => h.master.releasePartitionExternally(a)],
          ['unregisterJob', () => h.master.unregisterJob(a.jobId)],
        ] as const) {
          const error = await rejection(call);
          assert.ok(isShuffleError(error, 'SHF_ERR_FENCED'), `the old master's ${name} after epoch 2 registered the job must reject with SHF_ERR_FENCED, got ${String(error)}`);
          assert.equal(error.retryable, false);
        }
        const older = await h.createMaster();
        assertShuffleError(await rejection(() => older.registerJob({ jobId: a.jobId, epoch: 1 })), 'SHF_ERR_FENCED');
        const listed = (await newer.listPartitions(a.jobId)).map((p) => p.descriptor.partition.partitionId).sort();
        assert.deepEqual(listed, [a.partition.partitionId, b.partition.partitionId].sort(), 'nothing the old master released or unregistered was deleted');
        const read = await readAttempts(h, a);
        assert.deepEqual([read.records, read.intact], [50, 50], "the partition's data is still readable");
        // the newer master releases what it decides to
        await newer.releasePartitionExternally(b);
        assert.deepEqual((await newer.listPartitions(a.jobId)).map((p) => p.descriptor.partition.partitionId), [a.partition.partitionId]);
        await newer.unregisterJob(a.jobId);
      });
    });

    it('shows a new master on the same backends exactly the committed partitions, with sizes and attempts', { timeout: timeoutMs }, async (t) => {
      await ctx.withHarness(async (h) => {
        if (h.createMaster === undefined) {
          t.skip('the harness cannot create a second master on the same backends');
          return;
        }
        const jobId = uniqueJobId('resume-list');
        const a = await registerPartition(h.master, { jobId, resultId: 'rl', index: 0, type, subpartitions: 2, attempt: 0 });
        const b = await registerPartition(h.master, { jobId, resultId: 'rl', index: 1, type, subpartitions: 2, attempt: 2 });
        const unfinished = await registerPartition(h.master, { jobId, resultId: 'rl', index: 2, type, subpartitions: 2 });
        const released = await registerPartition(h.master, { jobId, resultId: 'rl', index: 3, type, subpartitions: 2 });
        await writeAttempt(h, a, 40);
        await writeAttempt(h, b, 400);
        await writeAttempt(h, released, 10);
        await h.master.releasePartitionExternally(released);
        const open = await h.producerEnvironment.createResultPartitionWriter({ descriptor: unfinished });
        try {
          await emitAll(open, attemptRecords(0, 0, 10));
          const before = await h.master.listPartitions(a.jobId);
          const master = await h.createMaster();
          const listed = [...(await master.listPartitions(a.jobId))].sort((x, y) => x.descriptor.partition.partitionIndex - y.descriptor.partition.partitionIndex);
          assert.deepEqual(
            listed.map((p) => [p.descriptor.partition.partitionId, p.descriptor.producer.attempt]),
            [[a.partition.partitionId, 0], [b.partition.partitionId, 2]],
            'exactly the committed partitions, with the attempts that committed them',
          );
          const sizes = new Map(before.map((p) => [p.descriptor.partition.partitionId as string, [...p.subpartitionBytes]]));
          for (const p of listed) {
            assert.deepEqual([...p.subpartitionBytes], sizes.get(p.descriptor.partition.partitionId), 'the new master reports the sizes the old one did');
            assert.equal(p.totalBytes, p.subpartitionBytes.reduce((x, y) => x + y, 0));
          }
          assert.ok(listed[1]!.totalBytes > listed[0]!.totalBytes * 5);
          // its descriptors are enough to read the data
          const read = await readAttempts(h, listed[1]!.descriptor);
          assert.deepEqual([read.records, read.intact, [...read.attempts]], [400, 400, [2]]);
        } finally {
          await open.close();
        }
      });
    });
  }

  it('memoizes concurrent close() of the master and environments, and rejects calls after close with SHF_ERR_CLOSED', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const jobId = uniqueJobId('closed');
      const descriptor = await registerPartition(h.master, { jobId, resultId: 'cl', index: 0, type, subpartitions: 2 });
      const targets = [h.producerEnvironment, ...(h.consumerEnvironment === h.producerEnvironment ? [] : [h.consumerEnvironment]), h.master];
      for (const target of targets) {
        let firstDone = false;
        const first = target.close().then(() => {
          firstDone = true;
        });
        const second = target.close();
        await second;
        assert.ok(firstDone, 'a second close() must resolve only once the first one is done');
        await first;
        await target.close();
      }
      const calls: [string, () => Promise<unknown>][] = [
        ['registerPartitionWithProducer', () => registerPartition(h.master, { jobId, resultId: 'cl', index: 1, type, subpartitions: 2 })],
        ['listPartitions', () => h.master.listPartitions(descriptor.jobId)],
        ['createResultPartitionWriter', () => h.producerEnvironment.createResultPartitionWriter({ descriptor })],
        ['createInputGate', () => h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } })],
      ];
      for (const [name, call] of calls) {
        const error = await rejection(call);
        assert.ok(isShuffleError(error, 'SHF_ERR_CLOSED'), `${name} after close() must reject with SHF_ERR_CLOSED, got ${String(error)}`);
      }
    }),
  );
}
