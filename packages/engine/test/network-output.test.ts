import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RECORD_HEADER_BYTES, type ResultPartitionWriter } from '@weft/shuffle-api';
import type { TaskBackpressure } from '../src/runtime/backpressure.js';
import { BROADCAST } from '../src/runtime/channel-selector.js';
import { NetworkOutput } from '../src/runtime/network-output.js';
import type { RecordSerializer } from '../src/serialization/record-serializer.js';

describe('NetworkOutput', () => {
  it('counts framed bytes per subpartition, a broadcast record in every one', () => {
    const written: string[] = [];
    const writer = {
      numberOfSubpartitions: 3,
      emitRecord: (record: Uint8Array, subpartition: number) => (written.push(`${subpartition}:${record.length}`), true),
      broadcastRecord: (record: Uint8Array) => (written.push(`*:${record.length}`), true),
    } as unknown as ResultPartitionWriter;
    const serializer: RecordSerializer = { serialize: (value) => new Uint8Array(value as number) } as RecordSerializer;
    // a record of n bytes goes to channel n % 3, except 7-byte records, broadcast
    const output = new NetworkOutput(writer, { select: (value) => ((value as number) === 7 ? BROADCAST : (value as number) % 3) }, serializer, {} as TaskBackpressure);
    for (const n of [3, 4, 7, 5, 7, 6]) output.collect(n);
    const h = RECORD_HEADER_BYTES;
    // by hand: channel 0 gets 3 and 6, channel 1 gets 4, channel 2 gets 5; each gets both 7s
    assert.deepEqual(output.subpartitionBytes, [3 + 6 + 4 * h + 14, 4 + 3 * h + 14, 5 + 3 * h + 14]);
    assert.deepEqual(written, ['0:3', '1:4', '*:7', '2:5', '*:7', '0:6']);
  });
});
