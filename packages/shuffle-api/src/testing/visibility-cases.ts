import { strict as assert } from 'node:assert';
import { it } from 'node:test';
import type { GateBatch, InputGate } from '../input-gate.js';
import { resultPartitionTypeProperties, type ResultPartitionType } from '../result-partition-type.js';
import type { ShuffleDescriptor } from '../shuffle-descriptor.js';
import { findShuffleError, isShuffleError } from '../shuffle-error.js';
import type { ConformanceHarness } from './harness.js';
import { type ChannelItem, emitAll, makeRecord, parseRecord, recordsOf, registerPartition, rejectionOf } from './exchange-helpers.js';
import {
  type SuiteContext,
  assertShuffleError,
  causeMessages,
  isPipelined,
  isReconsumable,
  readAll,
  uniqueJobId,
  writeFinished,
} from './suite-context.js';

/** A promise's outcome, observable without awaiting it; `early` says whether it settled before `isLate()`. */
interface Watched<T> {
  settled: boolean;
  early: boolean;
  value?: T;
  error?: unknown;
  readonly done: Promise<void>;
}

function watch<T>(promise: Promise<T>, isLate: () => boolean = () => false): Watched<T> {
  const w: { settled: boolean; early: boolean; value?: T; error?: unknown; done?: Promise<void> } = { settled: false, early: false };
  w.done = promise.then(
    (value) => Object.assign(w, { settled: true, early: !isLate(), value }),
    (error: unknown) => Object.assign(w, { settled: true, early: !isLate(), error }),
  ).then(() => undefined);
  return w as Watched<T>;
}

/**
 * Gives the implementation up to about `maxMs` to make `done()` true (it returns as soon as it is).
 * Used where either outcome is legal or where the wait only turns a hang into a clear failure: nothing
 * asserts how long anything took.
 */
async function waitUntil(done: () => boolean, maxMs: number): Promise<void> {
  for (let waited = 0; !done() && waited < maxMs; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** `seq` records, 100-byte payloads, alternating between 2 subpartitions. */
function records(from: number, to: number): { subpartition: number; record: Uint8Array }[] {
  return Array.from({ length: to - from }, (_, i) => ({ subpartition: (from + i) % 2, record: makeRecord(0, (from + i) % 2, from + i, 100) }));
}

/** Reads `gate` to its end, starting with a batch already read; each channel's items, records copied. */
async function collect(gate: InputGate, first: GateBatch | null): Promise<ChannelItem[][]> {
  const channels: ChannelItem[][] = gate.channels.map(() => []);
  for (let batch = first; batch !== null; batch = await gate.readBatch()) {
    const list = channels[batch.channel]!;
    if (batch.kind === 'event') list.push({ kind: 'event', event: batch.event });
    else for (const record of batch.records) list.push({ kind: 'record', record: record.slice() });
  }
  return channels;
}

/** Asserts channel `s` of 2 holds exactly records seq s, s+2, ... below `total`, intact, then end-of-partition. */
function assertWhole(channels: readonly ChannelItem[][], total: number): void {
  channels.forEach((items, s) => {
    const parsed = recordsOf(items).map(parseRecord);
    const expected = Array.from({ length: Math.ceil((total - s) / 2) }, (_, i) => s + 2 * i);
    assert.deepEqual(parsed.map((r) => r.seq), expected, `channel ${s} must hold every record of its subpartition, in order`);
    assert.ok(parsed.every((r) => r.intact && r.subpartition === s), `channel ${s} delivered a damaged or misrouted record`);
    assert.deepEqual(items[items.length - 1], { kind: 'event', event: { type: 'end-of-partition' } }, `channel ${s} must end with end-of-partition`);
  });
}

function describeOutcome(w: Watched<GateBatch | null>): string {
  if (w.error !== undefined) return `error ${String(w.error)}`;
  const batch = w.value;
  if (batch === null || batch === undefined) return 'the end of every channel';
  return batch.kind === 'records' ? `${batch.records.length} record(s)` : `event ${JSON.stringify(batch.event)}`;
}

/** What consumers see before `finish()`, after an abort, and after the job is gone. */
export function visibilityCases(ctx: SuiteContext, type: ResultPartitionType): void {
  const { timeoutMs } = ctx.options;

  if (!isPipelined(type)) {
    it('shows a gate opened while the partition is written nothing before finish() commits it, then all of it', { timeout: timeoutMs }, () =>
      ctx.withHarness(async (h) => {
        const descriptor = await registerPartition(h.master, { jobId: uniqueJobId('uncommitted'), resultId: 'uc', index: 0, type, subpartitions: 2 });
        const partitionId = descriptor.partition.partitionId;
        const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
        let gate: InputGate | undefined;
        let finished = false;
        try {
          await emitAll(writer, records(0, 200));
          writer.flush();
          gate = await h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } });
          const first = watch(gate.readBatch(), () => finished);
          await waitUntil(() => first.settled, 300);
          await emitAll(writer, records(200, 300));
          // settled before finish() was called: before any commit. A read that settles while finish() runs may
          // be answered by the commit itself (a replicated writer's finish() goes on after the commit is visible)
          const settledBeforeFinish = first.settled;
          await writer.finish();
          finished = true;
          await first.done;
          // InputGate: a read of a blocking partition still being produced may fail with PARTITION_NOT_FOUND,
          // or wait and deliver the whole committed partition once it is committed
          if (settledBeforeFinish) assert.ok(first.error !== undefined, `the gate delivered ${describeOutcome(first)} of a blocking partition before its producer finished`);
          if (first.error !== undefined) {
            assertShuffleError(first.error, 'SHF_ERR_PARTITION_NOT_FOUND', partitionId);
            await gate.close();
            gate = await h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } });
            assertWhole(await collect(gate, await gate.readBatch()), 300);
          } else {
            // delivered after the commit (a delivery before it would miss records): the whole partition
            assertWhole(await collect(gate, first.value ?? null), 300);
          }
        } finally {
          await gate?.close();
          await writer.close();
        }
      }),
    );
  } else {
    it('hands records to a pipelined consumer on flush(), before finish() and before a buffer fills', { timeout: timeoutMs }, () =>
      ctx.withHarness(async (h) => {
        const descriptor = await registerPartition(h.master, { jobId: uniqueJobId('flush'), resultId: 'fl', index: 0, type, subpartitions: 2 });
        const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
        const gate = await h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } });
        let finished = false;
        try {
          // 5 records of 24 bytes: far less than one buffer of either subpartition
          for (let seq = 0; seq < 5; seq++) writer.emitRecord(makeRecord(0, seq % 2, seq, 12), seq % 2);
          writer.flush();
          const seen: ChannelItem[][] = [[], []];
          const reading = watch(
            (async () => {
              while (seen[0]!.length + seen[1]!.length < 5) {
                const batch = await gate.readBatch();
                if (batch === null || batch.kind === 'event') throw new Error(`expected records, got ${JSON.stringify(batch)}`);
                for (const record of batch.records) seen[batch.channel]!.push({ kind: 'record', record: record.slice() });
              }
            })(),
            () => finished,
          );
          await waitUntil(() => reading.settled, 5_000);
          const early = reading.settled && reading.early;
          writer.emitRecord(makeRecord(0, 0, 5, 12), 0);
          await writer.finish();
          finished = true;
          await reading.done;
          if (reading.error !== undefined) throw reading.error;
          assert.ok(early, `flush() must hand the 5 records emitted so far to the consumer before finish(); it had ${seen[0]!.length + seen[1]!.length}`);
          const rest = await collect(gate, await gate.readBatch());
          const channels = seen.map((items, s) => [...items, ...rest[s]!]);
          assert.deepEqual(channels.map((items) => recordsOf(items).map((r) => parseRecord(r).seq)), [[0, 2, 4, 5], [1, 3]]);
          for (const items of channels) assert.deepEqual(items[items.length - 1], { kind: 'event', event: { type: 'end-of-partition' } });
        } finally {
          await gate.close();
          await writer.close();
        }
      }),
    );
  }

  for (const how of ['fail', 'close'] as const) {
    const title =
      how === 'fail'
        ? 'surfaces a producer failing mid-stream at the consumer, with its cause, and never as a complete partition'
        : 'aborts a writer closed before finish(): the consumer sees the producer failed (cause SHF_ERR_CLOSED), never a complete partition';
    it(title, { timeout: timeoutMs }, () =>
      ctx.withHarness(async (h) => {
        const descriptor = await registerPartition(h.master, { jobId: uniqueJobId(`abort-${how}`), resultId: how, index: 0, type, subpartitions: 2 });
        const partitionId = descriptor.partition.partitionId;
        const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
        const cause = new Error('user function exploded at record 300');
        const produce = async (): Promise<void> => {
          try {
            await emitAll(writer, records(0, 300));
            writer.flush();
            if (how === 'fail') writer.fail(cause);
          } finally {
            await writer.close();
          }
        };
        const consume = async (): Promise<{ error: unknown; records: number; ended: number[] }> => {
          const gate = await h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } });
          let delivered = 0;
          const ended: number[] = [];
          try {
            const reading = (async (): Promise<void> => {
              for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
                if (batch.kind === 'records') delivered += batch.records.length;
                else if (batch.event.type === 'end-of-partition') ended.push(batch.channel);
              }
              assert.fail(`the partition of a producer that ${how === 'fail' ? 'failed' : 'was closed before finish()'} was read to its end as complete`);
            })();
            return { error: await rejectionOf(reading), records: delivered, ended };
          } finally {
            await gate.close();
          }
        };
        const { error, records: delivered, ended } = isPipelined(type) ? (await Promise.all([produce(), consume()]))[1] : await produce().then(consume);
        assert.deepEqual(ended, [], 'no channel of an aborted partition may end with end-of-partition');
        const assertCause = (): void => {
          if (how === 'fail') {
            // The producer's error must be in the `.cause` chain (InputGate's contract), not only quoted in a message.
            const chain = causeMessages(error);
            assert.ok(
              chain.slice(1).some((m) => m.includes(cause.message)),
              `the consumer's error must carry the producer's error as its cause, got ${chain.join(' <- ')}`,
            );
          } else {
            assert.ok(findShuffleError((error as { cause?: unknown }).cause, 'SHF_ERR_CLOSED'), `a writer closed before finish() must show as caused by SHF_ERR_CLOSED, got ${causeMessages(error).join(' <- ')}`);
          }
        };
        if (isPipelined(type)) {
          assertShuffleError(error, 'SHF_ERR_PRODUCER_FAILED', partitionId);
          assertCause();
          return;
        }
        // InputGate: a blocking type delivers nothing and answers PRODUCER_FAILED with the cause, or PARTITION_NOT_FOUND.
        assert.equal(delivered, 0, 'a blocking partition whose producer aborted must deliver no record');
        const code = isShuffleError(error) ? error.code : undefined;
        assert.ok(
          code === 'SHF_ERR_PRODUCER_FAILED' || code === 'SHF_ERR_PARTITION_NOT_FOUND',
          `an aborted blocking partition must read as SHF_ERR_PRODUCER_FAILED or SHF_ERR_PARTITION_NOT_FOUND, got ${String(error)}`,
        );
        assertShuffleError(error, code, partitionId);
        if (code === 'SHF_ERR_PRODUCER_FAILED') assertCause();
        const listed = (await h.master.listPartitions(descriptor.jobId)).map((p) => p.descriptor.partition.partitionId);
        assert.ok(!listed.includes(partitionId), `an aborted partition must not be listed as finished (listed: ${listed.join(', ')})`);
      }),
    );
  }

  const persistent = resultPartitionTypeProperties(type).persistent;
  it(
    persistent
      ? 'keeps BLOCKING_PERSISTENT partitions, listed and readable, when their job is unregistered'
      : "releases a job's partitions when the job is unregistered: reads get PARTITION_NOT_FOUND and none is listed",
    { timeout: timeoutMs },
    () =>
      ctx.withHarness(async (h) => {
        const jobId = uniqueJobId('unregister');
        const descriptors: ShuffleDescriptor[] = [];
        for (let index = 0; index < 2; index++) descriptors.push(await registerPartition(h.master, { jobId, resultId: 'unreg', index, type, subpartitions: 2 }));
        const ids = descriptors.map((d) => d.partition.partitionId as string);
        const job = descriptors[0]!.jobId;
        if (isReconsumable(type)) {
          await writeFinished(h, descriptors[0]!, 20);
          await writeFinished(h, descriptors[1]!, 30);
          assert.deepEqual((await h.master.listPartitions(job)).map((p) => p.descriptor.partition.partitionId).sort(), ids);
        }
        await h.master.unregisterJob(job);
        if (persistent) {
          assert.deepEqual((await h.master.listPartitions(job)).map((p) => p.descriptor.partition.partitionId).sort(), ids);
          assert.deepEqual([(await readAll(h, descriptors[0]!)).length, (await readAll(h, descriptors[1]!)).length], [20, 30]);
          for (const d of descriptors) await h.master.releasePartitionExternally(d);
          return;
        }
        for (const d of descriptors) await assertReleased(h, d);
        assert.deepEqual(await h.master.listPartitions(job), [], 'an unregistered job has no partitions left');
      }),
  );
}

/** A read of `descriptor` fails with PARTITION_NOT_FOUND naming it (within ~10 s, rather than hanging). */
async function assertReleased(h: ConformanceHarness, descriptor: ShuffleDescriptor): Promise<void> {
  const read = watch(readAll(h, descriptor));
  await waitUntil(() => read.settled, 10_000);
  assert.ok(read.settled, `a read of ${descriptor.partition.partitionId} of an unregistered job neither failed nor ended`);
  assert.ok(read.error !== undefined, `${descriptor.partition.partitionId} of an unregistered job could still be read (${String(read.value?.length)} records)`);
  assertShuffleError(read.error, 'SHF_ERR_PARTITION_NOT_FOUND', descriptor.partition.partitionId);
}
