import type { ResultPartitionWriter } from '@weft/shuffle-api';
import type { Output } from '../operators/stream-operator.js';
import type { RecordSerializer } from '../serialization/record-serializer.js';
import type { TaskBackpressure } from './backpressure.js';
import { BROADCAST, type ChannelSelector } from './channel-selector.js';

/** Serializes records and writes them to one result partition, on the channel the selector picks. */
export class NetworkOutput implements Output {
  constructor(
    private readonly writer: ResultPartitionWriter,
    private readonly selector: ChannelSelector,
    private readonly serializer: RecordSerializer,
    private readonly backpressure: TaskBackpressure,
  ) {}

  collect(value: unknown): void {
    const channel = this.selector.select(value);
    const bytes = this.serializer.serialize(value);
    const writer = this.writer;
    const more = channel === BROADCAST ? writer.broadcastRecord(bytes) : writer.emitRecord(bytes, channel);
    if (!more) this.backpressure.block(writer);
  }
}

/** Sends each record to several outputs (a chain that forks). Values are shared, not copied. */
export class FanOutOutput implements Output {
  constructor(private readonly targets: readonly Output[]) {}

  collect(value: unknown): void {
    const targets = this.targets;
    for (let i = 0; i < targets.length; i++) (targets[i] as Output).collect(value);
  }
}

export const DISCARD_OUTPUT: Output = Object.freeze({ collect: () => {} });
