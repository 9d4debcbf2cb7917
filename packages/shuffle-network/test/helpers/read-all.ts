import type { ShuffleDescriptor, ShuffleEnvironment } from '@weft/shuffle-api';
import { drain, emitAll, makeRecord, parseRecord, recordsOf } from '@weft/shuffle-api/testing';

/** Writes `records` records to subpartition 0 of `descriptor` in `environment` while reading them back there; their sequence numbers. */
export async function readAllFrom(environment: ShuffleEnvironment, descriptor: ShuffleDescriptor, records: number): Promise<number[]> {
  const writer = await environment.createResultPartitionWriter({ descriptor });
  const gate = await environment.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } });
  try {
    const [, channels] = await Promise.all([
      (async () => {
        await emitAll(writer, Array.from({ length: records }, (_, seq) => ({ subpartition: 0, record: makeRecord(0, 0, seq, 20) })));
        await writer.finish();
      })(),
      drain(gate),
    ]);
    return channels.flatMap((items) => recordsOf(items).map((r) => parseRecord(r).seq));
  } finally {
    await gate.close();
    await writer.close();
  }
}
