import { strict as assert } from 'node:assert';
import { it } from 'node:test';
import type { ResultPartitionType } from '../result-partition-type.js';
import type { ShuffleDescriptor } from '../shuffle-descriptor.js';
import { drain, makeRecord, parseRecord, recordsOf, registerPartition, rejectionOf } from './exchange-helpers.js';
import {
  type SuiteContext,
  activeResourceCounts,
  assertShuffleError,
  isPipelined,
  isReconsumable,
  readAll,
  runExchange,
  settle,
  uniqueJobId,
  writeFinished,
} from './suite-context.js';

export function lifecycleCases(ctx: SuiteContext, type: ResultPartitionType): void {
  const { timeoutMs } = ctx.options;

  it('keeps the memory a producer holds within its budget when the consumer is slow', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const jobId = uniqueJobId('backpressure');
      const descriptor = await registerPartition(h.master, { jobId, resultId: 'bp', index: 0, type, subpartitions: 2 });
      const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
      const limit = writer.metrics.memoryLimitBytes;
      if (isPipelined(type)) assert.ok(Number.isFinite(limit), `a ${type} writer must report a finite memoryLimitBytes`);
      const recordBytes = 1024;
      const total = ctx.options.backpressureBytes;
      let emitted = 0;
      let consumed = 0;
      let maxBuffered = 0;
      let maxInFlight = 0;
      let pauses = 0;
      const produce = async (): Promise<void> => {
        try {
          for (let seq = 0; emitted < total; seq++) {
            const more = writer.emitRecord(makeRecord(0, seq % 2, seq, recordBytes - 12), seq % 2);
            emitted += recordBytes + 4;
            maxBuffered = Math.max(maxBuffered, writer.metrics.bufferedBytes);
            maxInFlight = Math.max(maxInFlight, emitted - consumed);
            if (!more) {
              pauses++;
              await writer.ready();
            }
          }
          await writer.finish();
        } finally {
          await writer.close();
        }
      };
      const consume = async (): Promise<void> => {
        const gate = await h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } });
        try {
          await drain(gate, {
            afterBatch: async (records, bytes) => {
              consumed += bytes + 4 * records;
              await new Promise((resolve) => setTimeout(resolve, 1));
            },
          });
        } finally {
          await gate.close();
        }
      };
      if (isPipelined(type)) await Promise.all([produce(), consume()]);
      else {
        await produce();
        await consume();
      }
      assert.equal(consumed, emitted, 'every byte emitted must be consumed');
      if (Number.isFinite(limit)) {
        assert.ok(maxBuffered <= limit + recordBytes + 4, `writer held ${maxBuffered} bytes, more than its budget ${limit}`);
        if (limit < total) assert.ok(pauses > 0, `pushing ${total} bytes through a budget of ${limit} must make the producer wait at least once`);
      }
      if (isPipelined(type)) {
        assert.ok(maxInFlight <= limit + recordBytes + 4, `${maxInFlight} bytes were in flight, more than the budget ${limit}`);
      }
    }),
  );

  it('closes writers and gates idempotently and leaves no timers, sockets or handles behind', { timeout: timeoutMs }, async () => {
    await settle();
    const before = activeResourceCounts();
    await ctx.withHarness(async (h) => {
      const result = await runExchange(h, {
        jobId: uniqueJobId('close'),
        resultId: 'close',
        type,
        producers: 2,
        subpartitions: 2,
        emitsOf: (p) => Array.from({ length: 500 }, (_, seq) => ({ subpartition: seq % 2, record: makeRecord(p, seq % 2, seq, 50) })),
        gates: [{ producers: [0, 1], range: { start: 0, end: 1 } }],
      });
      assert.equal(result.gates[0]!.flatMap(recordsOf).length, 1000);
      const descriptor = await registerPartition(h.master, { jobId: uniqueJobId('close-twice'), resultId: 'c2', index: 0, type, subpartitions: 1 });
      const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
      writer.emitRecord(makeRecord(0, 0, 0), 0);
      await writer.close();
      await writer.close();
      await writer[Symbol.asyncDispose]();
      const gate = await h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
      await gate.close();
      await gate.close();
      assertShuffleError(await rejectionOf(gate.readBatch()), 'SHF_ERR_CLOSED');
    });
    await settle();
    const after = activeResourceCounts();
    for (const [kind, count] of after) {
      assert.ok(count <= (before.get(kind) ?? 0), `${count - (before.get(kind) ?? 0)} ${kind} left open after close (before: ${before.get(kind) ?? 0})`);
    }
  });

  if (isReconsumable(type)) {
    it('lets a finished partition be read again and again until it is released, then reports it not found', { timeout: timeoutMs }, () =>
      ctx.withHarness(async (h) => {
        const jobId = uniqueJobId('reread');
        const descriptor = await registerPartition(h.master, { jobId, resultId: 'rr', index: 0, type, subpartitions: 3 });
        await writeFinished(h, descriptor, 200);
        const first = await readAll(h, descriptor);
        assert.equal(first.length, 200);
        const [second, third] = await Promise.all([readAll(h, descriptor), readAll(h, descriptor)]);
        assert.deepEqual(second, first);
        assert.deepEqual(third, first);
        await h.master.releasePartitionExternally(descriptor);
        await h.master.releasePartitionExternally(descriptor);
        assertShuffleError(await rejectionOf(readAll(h, descriptor)), 'SHF_ERR_PARTITION_NOT_FOUND', descriptor.partition.partitionId);
      }),
    );

    it('lists finished partitions of a job with their bytes per subpartition, and forgets released ones', { timeout: timeoutMs }, () =>
      ctx.withHarness(async (h) => {
        const jobId = uniqueJobId('list');
        const small = await registerPartition(h.master, { jobId, resultId: 'list', index: 0, type, subpartitions: 2 });
        const large = await registerPartition(h.master, { jobId, resultId: 'list', index: 1, type, subpartitions: 2 });
        await writeFinished(h, small, 10);
        await writeFinished(h, large, 1000);
        const listed = await h.master.listPartitions(small.jobId);
        const byId = new Map(listed.map((p) => [p.descriptor.partition.partitionId as string, p]));
        const s = byId.get(small.partition.partitionId);
        const l = byId.get(large.partition.partitionId);
        assert.ok(s && l, `both partitions must be listed, got ${[...byId.keys()].join(', ')}`);
        for (const p of [s, l]) {
          assert.equal(p.subpartitionBytes.length, 2);
          assert.equal(p.totalBytes, p.subpartitionBytes[0]! + p.subpartitionBytes[1]!);
        }
        // 1000 records of 76 bytes, half per subpartition, framed with a 4-byte header each.
        assert.ok(l.subpartitionBytes[0]! >= 500 * 80 && l.subpartitionBytes[1]! >= 500 * 80, `sizes ${l.subpartitionBytes.join(',')} are too small`);
        assert.ok(l.totalBytes > s.totalBytes * 10);
        await h.master.releasePartitionExternally(small);
        const after = (await h.master.listPartitions(small.jobId)).map((p) => p.descriptor.partition.partitionId);
        assert.deepEqual(after, [large.partition.partitionId]);
      }),
    );
  } else {
    it('releases a pipelined partition after its one consumption: a second reader gets PARTITION_NOT_FOUND', { timeout: timeoutMs }, () =>
      ctx.withHarness(async (h) => {
        const jobId = uniqueJobId('once');
        const descriptor = await registerPartition(h.master, { jobId, resultId: 'once', index: 0, type, subpartitions: 1 });
        const produce = writeFinished(h, descriptor, 100);
        const seqs = await readAll(h, descriptor);
        await produce;
        assert.equal(seqs.length, 100);
        assertShuffleError(await rejectionOf(readAll(h, descriptor)), 'SHF_ERR_PARTITION_NOT_FOUND', descriptor.partition.partitionId);
      }),
    );
  }

  it('reports an unknown partition as PARTITION_NOT_FOUND naming it', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const jobId = uniqueJobId('unknown');
      const real = await registerPartition(h.master, { jobId, resultId: 'real', index: 0, type, subpartitions: 1 });
      const ghost = { ...real, partition: { ...real.partition, resultId: 'ghost', partitionId: 'ghost#0' } } as unknown as ShuffleDescriptor;
      assertShuffleError(await rejectionOf(readAll(h, ghost)), 'SHF_ERR_PARTITION_NOT_FOUND', 'ghost#0');
    }),
  );

  it('keeps two jobs with the same partition ids apart', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const plan = (jobId: string, producer: number) => ({
        jobId,
        resultId: 'same',
        type,
        producers: 1,
        subpartitions: 1,
        emitsOf: () => Array.from({ length: 50 }, (_, seq) => ({ subpartition: 0, record: makeRecord(producer, 0, seq, 8) })),
        gates: [{ producers: [0], range: { start: 0, end: 0 } }],
      });
      const [a, b] = await Promise.all([runExchange(h, plan(uniqueJobId('job-a'), 1)), runExchange(h, plan(uniqueJobId('job-b'), 2))]);
      assert.deepEqual(new Set(recordsOf(a.gates[0]![0]!).map((r) => parseRecord(r).producer)), new Set([1]));
      assert.deepEqual(new Set(recordsOf(b.gates[0]![0]!).map((r) => parseRecord(r).producer)), new Set([2]));
      if (isReconsumable(type)) {
        await h.master.releasePartitionExternally(a.descriptors[0]!);
        assert.equal((await readAll(h, b.descriptors[0]!)).length, 50, "releasing one job's partition must not touch the other's");
      }
    }),
  );
}
