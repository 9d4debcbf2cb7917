import { strict as assert } from 'node:assert';
import { it } from 'node:test';
import { pointwiseConsumersOf, pointwiseProducersOf } from '../distribution-pattern.js';
import { DEFAULT_BUFFER_SIZE_BYTES } from '../record-framing.js';
import type { ResultPartitionType } from '../result-partition-type.js';
import type { ShuffleEvent } from '../shuffle-event.js';
import { type ChannelItem, drain, emitAll, makeRecord, parseRecord, recordsOf, registerPartition } from './exchange-helpers.js';
import { type SuiteContext, isPipelined, runExchange, uniqueJobId } from './suite-context.js';

function recordCount(producer: number, subpartition: number): number {
  return 40 + 37 * subpartition + 11 * producer;
}

function payloadSize(producer: number, subpartition: number, seq: number): number {
  return (producer * 131 + subpartition * 71 + seq * 29) % 400;
}

function* allToAllEmits(producer: number, subpartitions: number): Iterable<{ subpartition: number; record: Uint8Array }> {
  // Interleave subpartitions so every buffer of every subpartition fills gradually.
  const longest = recordCount(producer, subpartitions - 1);
  for (let seq = 0; seq < longest; seq++) {
    for (let s = 0; s < subpartitions; s++) {
      if (seq < recordCount(producer, s)) {
        yield { subpartition: s, record: makeRecord(producer, s, seq, payloadSize(producer, s, seq)) };
      }
    }
  }
}

/** Asserts a channel delivered exactly seq 0..n-1 of (producer, subpartition), intact, then end-of-partition. */
function assertChannel(items: readonly ChannelItem[], producer: number, subpartition: number, n: number): void {
  const last = items[items.length - 1];
  assert.ok(last?.kind === 'event' && last.event.type === 'end-of-partition', 'channel must end with end-of-partition');
  const records = recordsOf(items).map(parseRecord);
  assert.equal(records.length, n, `channel (${producer}, ${subpartition}) delivered ${records.length} records, expected ${n}`);
  records.forEach((r, seq) => {
    assert.deepEqual(
      [r.producer, r.subpartition, r.seq, r.intact, r.payloadBytes],
      [producer, subpartition, seq, true, payloadSize(producer, subpartition, seq)],
      `record ${seq} of channel (${producer}, ${subpartition}) is wrong or out of order`,
    );
  });
}

export function dataCases(ctx: SuiteContext, type: ResultPartitionType): void {
  const { timeoutMs } = ctx.options;

  it('delivers an all-to-all exchange exactly: every record once, in order per channel', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const producers = 3;
      const consumers = 4;
      const result = await runExchange(h, {
        jobId: uniqueJobId('all-to-all'),
        resultId: 'a2a',
        type,
        producers,
        subpartitions: consumers,
        emitsOf: (p) => allToAllEmits(p, consumers),
        gates: Array.from({ length: consumers }, (_, c) => ({
          producers: Array.from({ length: producers }, (_, p) => p),
          range: { start: c, end: c },
        })),
      });
      result.gates.forEach((channels, c) => {
        assert.equal(channels.length, producers);
        channels.forEach((items, p) => assertChannel(items, p, c, recordCount(p, c)));
      });
    }),
  );

  it('delivers pointwise exchanges (4 producers to 2 consumers, and 2 to 4) to exactly the right consumers', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      for (const [producers, consumers] of [
        [4, 2],
        [2, 4],
      ] as const) {
        // Each producer has one subpartition per consumer it feeds.
        const fed = (p: number): { start: number; end: number } => pointwiseConsumersOf(p, producers, consumers);
        const subpartitions = Math.max(...Array.from({ length: producers }, (_, p) => fed(p).end - fed(p).start));
        const gates: { producers: number[]; range: { start: number; end: number } }[] = [];
        for (let c = 0; c < consumers; c++) {
          const range = pointwiseProducersOf(c, producers, consumers);
          for (let p = range.start; p < range.end; p++) {
            const local = c - fed(p).start;
            gates.push({ producers: [p], range: { start: local, end: local } });
          }
        }
        const result = await runExchange(h, {
          jobId: uniqueJobId(`pointwise-${producers}-${consumers}`),
          resultId: 'pw',
          type,
          producers,
          subpartitions,
          emitsOf: function* (p) {
            const n = fed(p).end - fed(p).start;
            for (let s = 0; s < n; s++) {
              for (let seq = 0; seq < recordCount(p, s); seq++) {
                yield { subpartition: s, record: makeRecord(p, s, seq, payloadSize(p, s, seq)) };
              }
            }
          },
          gates,
        });
        result.gates.forEach((channels, g) => {
          const gate = gates[g]!;
          assertChannel(channels[0]!, gate.producers[0]!, gate.range.start, recordCount(gate.producers[0]!, gate.range.start));
        });
      }
    }),
  );

  it('ends every channel of an empty partition with end-of-partition and no records', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const result = await runExchange(h, {
        jobId: uniqueJobId('empty'),
        resultId: 'empty',
        type,
        producers: 2,
        subpartitions: 3,
        emitsOf: () => [],
        gates: [{ producers: [0, 1], range: { start: 0, end: 2 } }],
      });
      const channels = result.gates[0]!;
      assert.equal(channels.length, 6);
      for (const items of channels) assert.deepEqual(items, [{ kind: 'event', event: { type: 'end-of-partition' } }]);
    }),
  );

  it('carries records of 0 bytes, of exactly one buffer, and of 10 MiB byte for byte', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const big = ctx.options.largeRecordBytes;
      const sizes = [0, DEFAULT_BUFFER_SIZE_BYTES - 4, 0, DEFAULT_BUFFER_SIZE_BYTES, 1, big, 0, 13, DEFAULT_BUFFER_SIZE_BYTES + 1];
      const expected = sizes.map((size, seq) => {
        const bytes = new Uint8Array(size);
        for (let i = 0; i < size; i++) bytes[i] = (i * 7 + seq * 13 + (i >>> 10)) & 0xff;
        return bytes;
      });
      const result = await runExchange(h, {
        jobId: uniqueJobId('sizes'),
        resultId: 'sizes',
        type,
        producers: 1,
        subpartitions: 2,
        emitsOf: () => expected.map((record, seq) => ({ subpartition: 1, record })),
        gates: [{ producers: [0], range: { start: 0, end: 1 } }],
      });
      const [first, second] = result.gates[0]!;
      assert.deepEqual(first, [{ kind: 'event', event: { type: 'end-of-partition' } }]);
      const got = recordsOf(second!);
      assert.deepEqual(got.map((r) => r.length), sizes);
      got.forEach((record, i) => assert.ok(Buffer.from(record).equals(Buffer.from(expected[i]!)), `record ${i} (${sizes[i]} bytes) differs`));
    }),
  );

  it('delivers broadcast records and events in order with the records around them', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const jobId = uniqueJobId('broadcast');
      const userEvent: ShuffleEvent = { type: 'user', name: 'watermark', payload: { at: 42, tags: ['a'] } };
      const barrier: ShuffleEvent = { type: 'checkpoint-barrier', id: 7, timestampMs: 1_700_000_000_123 };
      const descriptor = await registerPartition(h.master, { jobId, resultId: 'bc', index: 0, type, subpartitions: 3 });
      const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
      const produce = async (): Promise<void> => {
        try {
          await emitAll(writer, [{ subpartition: 0, record: makeRecord(0, 0, 0, 10) }, { subpartition: 'all', record: makeRecord(9, 9, 1, 5) }]);
          writer.broadcastEvent(userEvent);
          await emitAll(writer, [{ subpartition: 1, record: makeRecord(0, 1, 2, 3) }]);
          writer.broadcastEvent(barrier);
          await emitAll(writer, [{ subpartition: 'all', record: makeRecord(9, 9, 3, 0) }]);
          writer.broadcastEvent({ type: 'end-of-data' });
          await writer.finish();
        } finally {
          await writer.close();
        }
      };
      const consume = async (): Promise<ChannelItem[][]> => {
        const gate = await h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 2 } });
        try {
          return await drain(gate, { iterate: true });
        } finally {
          await gate.close();
        }
      };
      // Pipelined types are read while produced; blocking ones after the producer finished, as a scheduler runs them.
      const channels = isPipelined(type) ? (await Promise.all([produce(), consume()]))[1] : await produce().then(consume);
      const describe = (items: readonly ChannelItem[]): string[] =>
        items.map((item) => (item.kind === 'event' ? `event:${JSON.stringify(item.event)}` : `record:${parseRecord(item.record).seq}`));
      const tail = [`event:${JSON.stringify(barrier)}`, 'record:3', 'event:{"type":"end-of-data"}', 'event:{"type":"end-of-partition"}'];
      assert.deepEqual(describe(channels[0]!), ['record:0', 'record:1', `event:${JSON.stringify(userEvent)}`, ...tail]);
      assert.deepEqual(describe(channels[1]!), ['record:1', `event:${JSON.stringify(userEvent)}`, 'record:2', ...tail]);
      assert.deepEqual(describe(channels[2]!), ['record:1', `event:${JSON.stringify(userEvent)}`, ...tail]);
    }),
  );

  it('reads a range of subpartitions of several partitions as channels in the documented order', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const producers = 2;
      const result = await runExchange(h, {
        jobId: uniqueJobId('range'),
        resultId: 'range',
        type,
        producers,
        subpartitions: 5,
        emitsOf: (p) => allToAllEmits(p, 5),
        gates: [{ producers: [0, 1], range: { start: 2, end: 4 } }],
      });
      const channels = result.gates[0]!;
      assert.equal(channels.length, 6);
      assert.deepEqual(
        result.channelInfos[0]!.map((c) => [c.channelIndex, c.partitionId, c.subpartition]),
        [0, 1].flatMap((p) => [2, 3, 4].map((s, i) => [p * 3 + i, result.descriptors[p]!.partition.partitionId, s])),
      );
      for (let p = 0; p < producers; p++) {
        for (let s = 2; s <= 4; s++) assertChannel(channels[p * 3 + (s - 2)]!, p, s, recordCount(p, s));
      }
    }),
  );
}
