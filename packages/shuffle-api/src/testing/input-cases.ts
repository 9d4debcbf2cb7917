import { strict as assert } from 'node:assert';
import { it } from 'node:test';
import type { ResultPartitionType } from '../result-partition-type.js';
import type { ShuffleDescriptor } from '../shuffle-descriptor.js';
import type { InputGate } from '../input-gate.js';
import type { ShuffleEvent } from '../shuffle-event.js';
import { type ChannelItem, drain, emitAll, makeRecord, parseRecord, registerPartition, rejectionOf, thrownBy } from './exchange-helpers.js';
import { type SuiteContext, assertInvalidArgument, isPipelined, uniqueJobId } from './suite-context.js';

export function inputCases(ctx: SuiteContext, type: ResultPartitionType): void {
  const { timeoutMs } = ctx.options;

  it('refuses malformed descriptors with SHF_ERR_INVALID_ARGUMENT naming the field', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const good = await registerPartition(h.master, { jobId: uniqueJobId('bad-descriptor'), resultId: 'bd', index: 0, type, subpartitions: 2 });
      const cases: [string, unknown][] = [
        ['numberOfSubpartitions', { ...good, partition: { ...good.partition, numberOfSubpartitions: -1 } }],
        ['numberOfSubpartitions', { ...good, partition: { ...good.partition, numberOfSubpartitions: 1e12 } }],
        ['partitionType', { ...good, partition: { ...good.partition, partitionType: 'SOMETIMES' } }],
        ['partitionId', { ...good, partition: { ...good.partition, partitionId: '../../etc/passwd' } }],
        ['jobId', { ...good, jobId: undefined }],
        ['descriptor', null],
      ];
      for (const [field, descriptor] of cases) {
        assertInvalidArgument(await rejectionOf(h.producerEnvironment.createResultPartitionWriter({ descriptor: descriptor as ShuffleDescriptor })), field);
        assertInvalidArgument(
          await rejectionOf(h.consumerEnvironment.createInputGate({ jobId: good.jobId, inputs: [descriptor as ShuffleDescriptor], subpartitions: { start: 0, end: 0 } })),
          field === 'descriptor' ? 'inputs[0]' : field,
        );
      }
      for (const [field, subpartitions] of [['numberOfSubpartitions', 0], ['numberOfSubpartitions', 2 ** 40], ['numberOfSubpartitions', 1.5]] as const) {
        assertInvalidArgument(
          await rejectionOf(registerPartition(h.master, { jobId: uniqueJobId('bad-register'), resultId: 'br', index: 0, type, subpartitions })),
          field,
        );
      }
    }),
  );

  it('refuses subpartitions out of range, bad records and misuse after finish or close', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const descriptor = await registerPartition(h.master, { jobId: uniqueJobId('bad-emit'), resultId: 'be', index: 0, type, subpartitions: 3 });
      for (const range of [{ start: 0, end: 3 }, { start: -1, end: 0 }, { start: 2, end: 1 }]) {
        assertInvalidArgument(await rejectionOf(h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: range })), 'subpartitions');
      }
      assertInvalidArgument(await rejectionOf(h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [], subpartitions: { start: 0, end: 0 } })), 'inputs');
      const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
      try {
        for (const bad of [-1, 3, 1.5, Number.NaN]) assertInvalidArgument(thrownBy(() => writer.emitRecord(makeRecord(0, 0, 0), bad)), 'subpartition');
        assertInvalidArgument(thrownBy(() => writer.emitRecord('not bytes' as unknown as Uint8Array, 0)), 'record');
        assertInvalidArgument(thrownBy(() => writer.broadcastEvent({ type: 'end-of-partition' })), 'event');
        assertInvalidArgument(thrownBy(() => writer.broadcastEvent({ type: 'no-such-event' } as unknown as ShuffleEvent)), 'event');
        writer.emitRecord(makeRecord(0, 0, 0), 0);
        await writer.finish();
        assertInvalidArgument(thrownBy(() => writer.emitRecord(makeRecord(0, 0, 1), 0)), 'state');
        assertInvalidArgument(thrownBy(() => writer.broadcastRecord(makeRecord(0, 0, 1))), 'state');
        assertInvalidArgument(thrownBy(() => writer.broadcastEvent({ type: 'end-of-data' })), 'state');
        assertInvalidArgument(await rejectionOf(writer.finish()), 'state');
      } finally {
        await writer.close();
      }
      assertInvalidArgument(thrownBy(() => writer.emitRecord(makeRecord(0, 0, 2), 0)), 'state');
      // The refused calls changed nothing, and close() after finish() did not abort: the partition holds
      // exactly the one record emitted before finish(), then end-of-partition, on every subpartition.
      const gate = await h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 2 } });
      try {
        const channels = await drain(gate);
        assert.deepEqual(
          channels.map((items) => items.map((item) => (item.kind === 'record' ? `record:${parseRecord(item.record).seq}` : `event:${item.event.type}`))),
          [['record:0', 'event:end-of-partition'], ['event:end-of-partition'], ['event:end-of-partition']],
        );
      } finally {
        await gate.close();
      }
    }),
  );

  it('refuses a record larger than maxRecordBytes with SHF_ERR_INVALID_ARGUMENT naming the record, and carries on', { timeout: timeoutMs }, () =>
    ctx.withHarness(async (h) => {
      const descriptor = await registerPartition(h.master, { jobId: uniqueJobId('oversized'), resultId: 'big', index: 0, type, subpartitions: 2 });
      const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
      let gate: InputGate | undefined;
      try {
        // Zero-filled and never written: the pages are not touched unless the writer copies the record.
        const oversized = new Uint8Array(ctx.options.maxRecordBytes + 1);
        assertInvalidArgument(thrownBy(() => writer.emitRecord(oversized, 1)), 'record');
        assertInvalidArgument(thrownBy(() => writer.broadcastRecord(oversized)), 'record');
        const produce = async (): Promise<void> => {
          await emitAll(writer, [{ subpartition: 1, record: makeRecord(0, 1, 0, 10) }]);
          await writer.finish();
        };
        const consume = async (): Promise<ChannelItem[][]> => {
          gate = await h.consumerEnvironment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 } });
          return drain(gate);
        };
        const channels = isPipelined(type) ? (await Promise.all([produce(), consume()]))[1] : await produce().then(consume);
        assert.deepEqual(
          channels.map((items) => items.map((item) => (item.kind === 'record' ? `record:${item.record.length}` : `event:${item.event.type}`))),
          [['event:end-of-partition'], ['record:22', 'event:end-of-partition']],
          'the refused record must leave no trace, and the writer must go on working',
        );
      } finally {
        await gate?.close();
        await writer.close();
      }
    }),
  );
}
