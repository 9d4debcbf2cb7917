import type { GateItem, InputGate } from './input-gate.js';

/**
 * The item-by-item view of a gate's batches: each record of a batch, then each event, in the order
 * `readBatch()` returns them. Implementations return it from `[Symbol.asyncIterator]()` so that the
 * iterator and the batched read can never disagree. Records are views, valid until the next step.
 */
export async function* gateItems(gate: Pick<InputGate, 'readBatch'>): AsyncGenerator<GateItem, void, undefined> {
  for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
    if (batch.kind === 'event') {
      yield batch;
      continue;
    }
    for (const record of batch.records) yield { kind: 'record', channel: batch.channel, record };
  }
}
