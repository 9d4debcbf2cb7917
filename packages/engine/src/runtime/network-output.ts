import { RECORD_HEADER_BYTES, type ResultPartitionWriter } from '@weft/shuffle-api';
import type { Output } from '../operators/stream-operator.js';
import type { RecordSerializer } from '../serialization/record-serializer.js';
import type { TaskBackpressure } from './backpressure.js';
import { BROADCAST, type ChannelSelector } from './channel-selector.js';

/**
 * Serializes records and writes them to one result partition, on the channel the selector picks, and
 * counts the framed bytes (record + its RECORD_HEADER_BYTES header) of each subpartition: what the
 * adaptive scheduler decides a consumer's parallelism from (`subpartitionBytes`; a broadcast record
 * counts in every subpartition, as the writer's own `metrics.bytes` does).
 */
export class NetworkOutput implements Output {
  /** Framed bytes written to each subpartition alone so far (broadcast records not included). */
  readonly #unicastBytes: Float64Array;
  /** Framed bytes of broadcast records so far: each counts in every subpartition. */
  #broadcastBytes = 0;

  constructor(
    private readonly writer: ResultPartitionWriter,
    private readonly selector: ChannelSelector,
    private readonly serializer: RecordSerializer,
    private readonly backpressure: TaskBackpressure,
  ) {
    this.#unicastBytes = new Float64Array(writer.numberOfSubpartitions);
  }

  /** Framed bytes written to each subpartition so far, broadcast records included. */
  get subpartitionBytes(): number[] {
    const broadcast = this.#broadcastBytes;
    return Array.from(this.#unicastBytes, (bytes) => bytes + broadcast);
  }

  collect(value: unknown): void {
    const channel = this.selector.select(value);
    const bytes = this.serializer.serialize(value);
    const writer = this.writer;
    const framed = bytes.length + RECORD_HEADER_BYTES;
    let more: boolean;
    if (channel === BROADCAST) {
      more = writer.broadcastRecord(bytes);
      this.#broadcastBytes += framed;
    } else {
      more = writer.emitRecord(bytes, channel);
      this.#unicastBytes[channel] = (this.#unicastBytes[channel] as number) + framed;
    }
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
