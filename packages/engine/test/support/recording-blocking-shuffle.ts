import {
  type GateBatch,
  type InputChannelInfo,
  type InputGate,
  type ResultPartitionWriter,
  type ShuffleDescriptor,
  type ShuffleEnvironment,
  type ShuffleMaster,
  type ShuffleServiceFactory,
  gateItems,
  partitionNotFound,
} from '@weft/shuffle-api';

/** What the recording shuffle saw, in order. `attempt` is the producing or consuming execution attempt. */
export type ShuffleRecord =
  | { readonly kind: 'writer-created'; readonly attempt: string; readonly partitionId: string }
  | { readonly kind: 'writer-finished'; readonly attempt: string; readonly partitionId: string }
  | { readonly kind: 'writer-closed'; readonly attempt: string; readonly partitionId: string }
  /** `unfinished`: the gate's input partitions whose producer had not finished when the gate was created. */
  | { readonly kind: 'gate-created'; readonly attempt: string; readonly partitionIds: readonly string[]; readonly unfinished: readonly string[] }
  | { readonly kind: 'gate-closed'; readonly attempt: string }
  /** `releasePartitionExternally` of the partition attempt `producer` wrote. */
  | { readonly kind: 'released'; readonly producer: string; readonly partitionId: string };

interface StoredPartition {
  readonly subpartitions: Uint8Array[][];
  finished: boolean;
  readonly waiters: (() => void)[];
}

const SERVICE_ID = 'testing-recording-blocking';

/**
 * A BLOCKING shuffle double for engine tests (the engine may not depend on an implementation): partitions
 * live in this process's memory and every writer and gate the engine creates, finishes and closes is
 * logged in `records`, so a test can check the scheduling around them — which tasks ran at once, and
 * whether a consumer opened a gate before its producers finished.
 *
 * A writer's `finish()` takes a few turns of the event loop (as a real store's flush would), so a scheduler
 * that starts consumers early, or more regions than it has slots, is seen doing it. A gate over an
 * unfinished partition waits for it (and records that it had to). A released partition is gone: a gate
 * created over it fails with SHF_ERR_PARTITION_NOT_FOUND naming it, as a real store's would.
 */
export function testingRecordingBlockingShuffle(): ShuffleServiceFactory & {
  readonly records: ShuffleRecord[];
  /** Loses every attempt of the partition now (a disk gone): gates over it fail as over a released one. */
  lose(partitionId: string): void;
} {
  const records: ShuffleRecord[] = [];
  const partitions = new Map<string, StoredPartition>();
  const released = new Set<string>();
  /** The newest registration of each partition id (what listPartitions answers for, once finished). */
  const registered = new Map<string, ShuffleDescriptor>();
  const keyOf = (d: ShuffleDescriptor): string => `${d.partition.partitionId}@${d.producer.attempt}`;
  const partitionOf = (d: ShuffleDescriptor): StoredPartition => {
    const key = keyOf(d);
    let stored = partitions.get(key);
    if (stored === undefined) {
      stored = { subpartitions: Array.from({ length: d.partition.numberOfSubpartitions }, () => []), finished: false, waiters: [] };
      partitions.set(key, stored);
    }
    return stored;
  };

  const master: ShuffleMaster = {
    shuffleServiceId: SERVICE_ID,
    start: async () => {},
    close: async () => {},
    registerJob: async () => {},
    unregisterJob: async () => {},
    registerPartitionWithProducer: async (request) => {
      const descriptor: ShuffleDescriptor = { shuffleServiceId: SERVICE_ID, jobId: request.jobId, partition: request.partition, producer: request.producer, details: null };
      registered.set(request.partition.partitionId, descriptor);
      return descriptor;
    },
    releasePartitionExternally: async (descriptor) => {
      if (released.has(keyOf(descriptor))) return;
      released.add(keyOf(descriptor));
      partitions.delete(keyOf(descriptor));
      records.push({ kind: 'released', producer: descriptor.producer.producerId, partitionId: descriptor.partition.partitionId });
    },
    // partitions outlive a job (unregisterJob keeps them), so a second job master on this factory sees them
    listPartitions: async (jobId) =>
      [...registered.values()]
        .filter((d) => d.jobId === jobId && partitions.get(keyOf(d))?.finished === true)
        .map((descriptor) => {
          const subpartitionBytes = (partitions.get(keyOf(descriptor)) as StoredPartition).subpartitions.map((records) => records.reduce((n, r) => n + r.length, 0));
          return { descriptor, subpartitionBytes, totalBytes: subpartitionBytes.reduce((a, b) => a + b, 0) };
        }),
    [Symbol.asyncDispose]: async () => {},
  };

  const createWriter = (descriptor: ShuffleDescriptor): ResultPartitionWriter => {
    const attempt = descriptor.producer.producerId;
    const partitionId = descriptor.partition.partitionId;
    const stored = partitionOf(descriptor);
    const metrics = { records: 0, bytes: 0, bufferedBytes: 0, memoryLimitBytes: 0 };
    records.push({ kind: 'writer-created', attempt, partitionId });
    const emit = (record: Uint8Array, subpartition: number): boolean => {
      (stored.subpartitions[subpartition] as Uint8Array[]).push(record.slice());
      metrics.records++;
      metrics.bytes += record.length;
      return true;
    };
    return {
      partitionId: descriptor.partition.partitionId,
      numberOfSubpartitions: descriptor.partition.numberOfSubpartitions,
      metrics,
      emitRecord: emit,
      broadcastRecord: (record) => {
        for (let s = 0; s < stored.subpartitions.length; s++) emit(record, s);
        return true;
      },
      broadcastEvent: () => true,
      ready: async () => {},
      flush: () => {},
      finish: async () => {
        for (let turn = 0; turn < 3; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
        stored.finished = true;
        records.push({ kind: 'writer-finished', attempt, partitionId });
        for (const wake of stored.waiters.splice(0)) wake();
      },
      fail: () => {},
      close: async () => void records.push({ kind: 'writer-closed', attempt, partitionId }),
      [Symbol.asyncDispose]: async () => {},
    };
  };

  const createGate = (inputs: readonly ShuffleDescriptor[], start: number, end: number, attempt: string): InputGate => {
    const gone = inputs.find((d) => released.has(keyOf(d)));
    if (gone !== undefined) throw partitionNotFound(gone.partition.partitionId, `attempt ${gone.producer.producerId}'s partition was released`);
    const channels: InputChannelInfo[] = [];
    const sources: { stored: StoredPartition; subpartition: number }[] = [];
    for (const descriptor of inputs) {
      for (let s = start; s <= end; s++) {
        channels.push({ channelIndex: channels.length, partitionId: descriptor.partition.partitionId, subpartition: s });
        sources.push({ stored: partitionOf(descriptor), subpartition: s });
      }
    }
    records.push({
      kind: 'gate-created',
      attempt,
      partitionIds: inputs.map((d) => d.partition.partitionId),
      unfinished: inputs.filter((d) => !partitionOf(d).finished).map((d) => d.partition.partitionId),
    });
    let next = 0;
    let closed = false;
    const gate: InputGate = {
      channels,
      readBatch: async (): Promise<GateBatch | null> => {
        while (!closed && next < sources.length) {
          const channel = next++;
          const { stored, subpartition } = sources[channel] as (typeof sources)[number];
          if (!stored.finished) await new Promise<void>((resolve) => stored.waiters.push(resolve));
          const batch = stored.subpartitions[subpartition] as Uint8Array[];
          if (batch.length > 0) return { kind: 'records', channel, records: batch };
        }
        return null;
      },
      close: async () => {
        if (closed) return;
        closed = true;
        records.push({ kind: 'gate-closed', attempt });
      },
      [Symbol.asyncIterator]: () => gateItems(gate),
      [Symbol.asyncDispose]: () => gate.close(),
    };
    return gate;
  };

  const environment: ShuffleEnvironment = {
    shuffleServiceId: SERVICE_ID,
    createResultPartitionWriter: async (request) => createWriter(request.descriptor),
    createInputGate: async (request) => createGate(request.inputs, request.subpartitions.start, request.subpartitions.end, request.consumerId ?? '?'),
    releasePartitionsLocally: async () => {},
    close: async () => {},
    [Symbol.asyncDispose]: async () => {},
  };
  const lose = (partitionId: string): void => {
    for (const key of partitions.keys()) {
      if (key.slice(0, key.lastIndexOf('@')) !== partitionId) continue;
      partitions.delete(key);
      released.add(key);
    }
  };
  return { shuffleServiceId: SERVICE_ID, records, lose, createShuffleMaster: () => master, createShuffleEnvironment: () => environment };
}
