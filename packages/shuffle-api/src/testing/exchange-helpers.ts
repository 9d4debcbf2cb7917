import { executionAttemptId, executionVertexId, jobId, resultPartitionId, intermediateResultId, taskExecutorId } from '../ids.js';
import type { InputGate } from '../input-gate.js';
import type { ResultPartitionType } from '../result-partition-type.js';
import type { ResultPartitionWriter } from '../result-partition-writer.js';
import type { ShuffleDescriptor } from '../shuffle-descriptor.js';
import type { ShuffleEvent } from '../shuffle-event.js';
import type { ShuffleMaster } from '../shuffle-master.js';

/** The partition a test registers: `<resultId>#<index>` of `jobId`. */
export interface PartitionSpec {
  readonly jobId: string;
  readonly resultId: string;
  readonly index: number;
  readonly type: ResultPartitionType;
  readonly subpartitions: number;
  readonly attempt?: number;
  /** The job master run's epoch (`RegisterPartitionRequest.epoch`); omitted when undefined. */
  readonly epoch?: number;
  /** The producer's task executor. @defaultValue 'conformance' */
  readonly taskExecutorId?: string;
}

const registeredJobs = new WeakMap<ShuffleMaster, Set<string>>();

/** Registers the job with the master (once per master) and then the partition. */
export async function registerPartition(master: ShuffleMaster, spec: PartitionSpec): Promise<ShuffleDescriptor> {
  let jobs = registeredJobs.get(master);
  if (jobs === undefined) registeredJobs.set(master, (jobs = new Set()));
  if (!jobs.has(spec.jobId)) {
    await master.registerJob({ jobId: jobId(spec.jobId) });
    jobs.add(spec.jobId);
  }
  const vertex = executionVertexId(`producer-of-${spec.resultId}`, spec.index);
  return master.registerPartitionWithProducer({
    jobId: jobId(spec.jobId),
    partition: {
      resultId: intermediateResultId(spec.resultId),
      partitionId: resultPartitionId(spec.resultId, spec.index),
      partitionIndex: spec.index,
      partitionType: spec.type,
      numberOfSubpartitions: spec.subpartitions,
    },
    producer: {
      producerId: executionAttemptId(vertex, spec.attempt ?? 0),
      attempt: spec.attempt ?? 0,
      taskExecutorId: taskExecutorId(spec.taskExecutorId ?? 'conformance'),
    },
    ...(spec.epoch === undefined ? {} : { epoch: spec.epoch }),
  });
}

const HEADER = 12;

/**
 * A record that says where it came from: producer (uint32), subpartition (uint32), sequence number
 * (uint32), then `payloadBytes` bytes derived from the three, so any corruption is detectable.
 */
export function makeRecord(producer: number, subpartition: number, seq: number, payloadBytes = 0): Uint8Array {
  const out = new Uint8Array(HEADER + payloadBytes);
  const view = new DataView(out.buffer);
  view.setUint32(0, producer, true);
  view.setUint32(4, subpartition, true);
  view.setUint32(8, seq, true);
  const seed = (producer * 31 + subpartition * 17 + seq * 7) & 0xff;
  for (let i = 0; i < payloadBytes; i++) out[HEADER + i] = (seed + i) & 0xff;
  return out;
}

export interface ParsedRecord {
  readonly producer: number;
  readonly subpartition: number;
  readonly seq: number;
  readonly payloadBytes: number;
  /** The payload matches what makeRecord wrote. */
  readonly intact: boolean;
}

export function parseRecord(bytes: Uint8Array): ParsedRecord {
  if (bytes.length < HEADER) return { producer: -1, subpartition: -1, seq: -1, payloadBytes: 0, intact: false };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const producer = view.getUint32(0, true);
  const subpartition = view.getUint32(4, true);
  const seq = view.getUint32(8, true);
  const seed = (producer * 31 + subpartition * 17 + seq * 7) & 0xff;
  let intact = true;
  for (let i = HEADER; i < bytes.length; i++) {
    if (bytes[i] !== ((seed + i - HEADER) & 0xff)) {
      intact = false;
      break;
    }
  }
  return { producer, subpartition, seq, payloadBytes: bytes.length - HEADER, intact };
}

/** Emits `records` in order, awaiting `ready()` whenever the writer asks for it. */
export async function emitAll(
  writer: ResultPartitionWriter,
  records: Iterable<{ readonly subpartition: number | 'all'; readonly record: Uint8Array }>,
): Promise<void> {
  for (const { subpartition, record } of records) {
    const more = subpartition === 'all' ? writer.broadcastRecord(record) : writer.emitRecord(record, subpartition);
    if (!more) await writer.ready();
  }
}

/** What one channel delivered, in order: records (copied) and events. */
export type ChannelItem = { readonly kind: 'record'; readonly record: Uint8Array } | { readonly kind: 'event'; readonly event: ShuffleEvent };

export interface DrainOptions {
  /** Read with the async iterator instead of readBatch. */
  readonly iterate?: boolean;
  /** Called after each batch; may delay to make a slow consumer. */
  readonly afterBatch?: (recordsInBatch: number, bytesInBatch: number) => Promise<void> | void;
}

/** Reads `gate` to the end; returns each channel's items in order. */
export async function drain(gate: InputGate, options: DrainOptions = {}): Promise<ChannelItem[][]> {
  const channels: ChannelItem[][] = gate.channels.map(() => []);
  const at = (channel: number): ChannelItem[] => {
    const list = channels[channel];
    if (list === undefined) throw new Error(`gate returned channel ${channel}, but has ${channels.length} channels`);
    return list;
  };
  if (options.iterate === true) {
    for await (const item of gate) {
      if (item.kind === 'record') at(item.channel).push({ kind: 'record', record: item.record.slice() });
      else at(item.channel).push({ kind: 'event', event: item.event });
      await options.afterBatch?.(item.kind === 'record' ? 1 : 0, item.kind === 'record' ? item.record.length : 0);
    }
    return channels;
  }
  for (;;) {
    const batch = await gate.readBatch();
    if (batch === null) break;
    let bytes = 0;
    if (batch.kind === 'records') {
      const list = at(batch.channel);
      for (const record of batch.records) {
        list.push({ kind: 'record', record: record.slice() });
        bytes += record.length;
      }
    } else {
      at(batch.channel).push({ kind: 'event', event: batch.event });
    }
    await options.afterBatch?.(batch.kind === 'records' ? batch.records.length : 0, bytes);
  }
  return channels;
}

export function recordsOf(items: readonly ChannelItem[]): Uint8Array[] {
  return items.flatMap((item) => (item.kind === 'record' ? [item.record] : []));
}

/** Awaits `promise`, returning the error it rejects with (or throwing if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection, but the promise resolved');
}

/** Runs `fn`, returning what it throws (or throwing if it does not). */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error, but none was thrown');
}
