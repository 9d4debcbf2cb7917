import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { END_OF_PARTITION, type GateBatch, type GateItem, gateItems } from '@weft/shuffle-api';

function scripted(batches: GateBatch[]): { readBatch(): Promise<GateBatch | null>; reads: number } {
  const gate = {
    reads: 0,
    async readBatch(): Promise<GateBatch | null> {
      gate.reads++;
      return batches.shift() ?? null;
    },
  };
  return gate;
}

describe('gateItems', () => {
  it('yields every record of each batch, then events, in the order the gate returns them', async () => {
    const a = Uint8Array.of(1);
    const b = Uint8Array.of(2);
    const c = Uint8Array.of(3);
    const gate = scripted([
      { kind: 'records', channel: 1, records: [a, b] },
      { kind: 'event', channel: 1, event: END_OF_PARTITION },
      { kind: 'records', channel: 0, records: [] },
      { kind: 'records', channel: 0, records: [c] },
    ]);
    const items: GateItem[] = [];
    for await (const item of gateItems(gate)) items.push(item);
    assert.deepEqual(items, [
      { kind: 'record', channel: 1, record: a },
      { kind: 'record', channel: 1, record: b },
      { kind: 'event', channel: 1, event: END_OF_PARTITION },
      { kind: 'record', channel: 0, record: c },
    ]);
    assert.equal(gate.reads, 5, 'reads until the gate answers null, and not after');
  });

  it('reads the next batch only when the consumer asks for the item after the current batch', async () => {
    const gate = scripted([
      { kind: 'records', channel: 0, records: [Uint8Array.of(1), Uint8Array.of(2)] },
      { kind: 'records', channel: 0, records: [Uint8Array.of(3)] },
    ]);
    const iterator = gateItems(gate);
    await iterator.next();
    await iterator.next();
    assert.equal(gate.reads, 1);
    await iterator.next();
    assert.equal(gate.reads, 2);
    await iterator.return();
  });
});
