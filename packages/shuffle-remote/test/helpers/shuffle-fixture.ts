import { join } from 'node:path';
import {
  type Clock,
  type ResultPartitionType,
  type ShuffleDescriptor,
  executionAttemptId,
  executionVertexId,
  intermediateResultId,
  jobId,
  resultPartitionId,
  taskExecutorId,
} from '@weft/shuffle-api';
import {
  type RemoteShuffleEnvironment,
  type RemoteShuffleMaster,
  type RemoteShuffleOptions,
  type RemoteShuffleServiceFactory,
  createRemoteShuffleServiceFactory,
} from '@weft/shuffle-remote';
import { createTempDir, type TempDir } from '@weft/testkit';

export interface PartitionSpec {
  readonly job: string;
  readonly result?: string;
  readonly index?: number;
  readonly subpartitions?: number;
  readonly attempt?: number;
  readonly type?: ResultPartitionType;
}

/** A started master and an environment over one factory; closes everything (and its temp dir) on dispose. */
export interface ShuffleFixture extends AsyncDisposable {
  readonly factory: RemoteShuffleServiceFactory;
  readonly master: RemoteShuffleMaster;
  readonly env: RemoteShuffleEnvironment;
  readonly dir: string | undefined;
  register(spec: PartitionSpec): Promise<ShuffleDescriptor>;
  /** A descriptor of another attempt of a registered partition (as a re-executed producer gets). */
  attemptOf(descriptor: ShuffleDescriptor, attempt: number): ShuffleDescriptor;
  close(): Promise<void>;
}

/** A fixture over a fresh local directory and SQLite file (unless `options` name other stores); `clock` goes to master and environment. */
export async function shuffleFixture(options: RemoteShuffleOptions = {}, context: { readonly clock?: Clock } = {}): Promise<ShuffleFixture> {
  let dir: TempDir | undefined;
  let resolved = options;
  if (options.store === undefined || options.meta === undefined) {
    dir = await createTempDir('weft-remote-test-');
    resolved = {
      store: `file://${join(dir.path, 'data')}`,
      meta: `sqlite://${join(dir.path, 'meta.db')}`,
      ...options,
    };
  }
  const factory = createRemoteShuffleServiceFactory(resolved);
  const master = factory.createShuffleMaster(context);
  const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('test'), ...context });
  const close = async (): Promise<void> => {
    try {
      await env.close();
      await master.close();
    } finally {
      await dir?.remove();
    }
  };
  try {
    await master.start();
  } catch (error) {
    await close();
    throw error;
  }
  const registered = new Set<string>();
  return {
    factory,
    master,
    env,
    dir: dir?.path,
    async register(spec) {
      if (!registered.has(spec.job)) {
        await master.registerJob({ jobId: jobId(spec.job) });
        registered.add(spec.job);
      }
      const result = spec.result ?? 'edge';
      const index = spec.index ?? 0;
      const attempt = spec.attempt ?? 0;
      return master.registerPartitionWithProducer({
        jobId: jobId(spec.job),
        partition: {
          resultId: intermediateResultId(result),
          partitionId: resultPartitionId(result, index),
          partitionIndex: index,
          partitionType: spec.type ?? 'BLOCKING',
          numberOfSubpartitions: spec.subpartitions ?? 2,
        },
        producer: { producerId: executionAttemptId(executionVertexId(`map-${result}`, index), attempt), attempt, taskExecutorId: taskExecutorId('test') },
      });
    },
    attemptOf(descriptor, attempt) {
      const vertex = executionVertexId(`map-${descriptor.partition.resultId}`, descriptor.partition.partitionIndex);
      return { ...descriptor, producer: { ...descriptor.producer, attempt, producerId: executionAttemptId(vertex, attempt) } };
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** `count` records of `bytes` bytes for subpartition `s`, tagged so a reader can check them. */
export function taggedRecord(tag: number, s: number, i: number, bytes = 64): Uint8Array {
  const out = new Uint8Array(Math.max(12, bytes));
  const view = new DataView(out.buffer);
  view.setUint32(0, tag, true);
  view.setUint32(4, s, true);
  view.setUint32(8, i, true);
  for (let k = 12; k < out.length; k++) out[k] = (tag + s * 7 + i * 13 + k) & 0xff;
  return out;
}

export function tagOf(record: Uint8Array): { tag: number; s: number; i: number } {
  const view = new DataView(record.buffer, record.byteOffset, record.byteLength);
  return { tag: view.getUint32(0, true), s: view.getUint32(4, true), i: view.getUint32(8, true) };
}

/** Writes `perSubpartition` tagged records into every subpartition and finishes (commits). */
export async function writePartition(env: RemoteShuffleEnvironment, descriptor: ShuffleDescriptor, perSubpartition: number, tag = 1, bytes = 64): Promise<void> {
  const writer = await env.createResultPartitionWriter({ descriptor });
  try {
    for (let i = 0; i < perSubpartition; i++) {
      for (let s = 0; s < descriptor.partition.numberOfSubpartitions; s++) {
        if (!writer.emitRecord(taggedRecord(tag, s, i, bytes), s)) await writer.ready();
      }
    }
    await writer.finish();
  } finally {
    await writer.close();
  }
}

/** Reads every subpartition of `descriptor`; returns the records (copied) per subpartition. */
export async function readPartition(env: RemoteShuffleEnvironment, descriptor: ShuffleDescriptor): Promise<Uint8Array[][]> {
  const n = descriptor.partition.numberOfSubpartitions;
  const gate = await env.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: n - 1 } });
  const out: Uint8Array[][] = Array.from({ length: n }, () => []);
  try {
    for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
      if (batch.kind === 'records') for (const record of batch.records) out[batch.channel]!.push(record.slice());
    }
  } finally {
    await gate.close();
  }
  return out;
}

export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}
