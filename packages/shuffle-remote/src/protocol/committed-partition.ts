import {
  MAX_SUBPARTITIONS,
  type ShuffleDescriptor,
  invalidArgument,
  validateId,
  validateInteger,
  validateShuffleDescriptor,
} from '@weft/shuffle-api';
import { checkKey } from '../storage/object-key.js';

/** The body of a commit request (`POST …/attempts/<a>/commit`). */
export interface CommitRequestBody {
  /** The descriptor the writer was created with (its token is dropped before it is stored). */
  readonly descriptor: ShuffleDescriptor;
  /** Framed record bytes per subpartition, before compression. */
  readonly subpartitionBytes: readonly number[];
  /**
   * The writer pushes this attempt to several servers (replicas, or a spare it moved to): the same
   * attempt committed on another server first is a copy of it, recorded next to it, not a conflict.
   * @defaultValue false
   */
  readonly replica?: boolean;
}

/**
 * A committed partition, as the server stores it (`commit.json`), lists it (`GET …/partitions`) and
 * publishes it in the Redis commit index. Plain JSON.
 */
export interface CommittedPartition {
  readonly jobId: string;
  readonly partitionId: string;
  /** The producer attempt whose data is visible. */
  readonly attempt: number;
  /** The server holding it on disk. */
  readonly serverId: string;
  /** The committing writer's descriptor, without a token. */
  readonly descriptor: ShuffleDescriptor;
  /** BLOCKING_PERSISTENT: survives the release of its job. */
  readonly persistent: boolean;
  readonly numberOfSubpartitions: number;
  readonly numberOfRegions: number;
  readonly indexOffset: number;
  readonly indexLength: number;
  /** The whole data object: blocks, index and footer. */
  readonly objectBytes: number;
  readonly subpartitionBytes: readonly number[];
  readonly totalBytes: number;
  readonly committedAtMs: number;
  /** The data object's key, on the server's disk and in the S3 tier (`<job>/<partition>/<attempt>.<writeId>.wsm`). */
  readonly objectKey: string;
  /** The S3 tier holds a complete copy under `objectKey`: readers may use it when the server is gone. */
  readonly tiered: boolean;
}

/** Checks a commit request body; SHF_ERR_INVALID_ARGUMENT naming the field. */
export function validateCommitRequestBody(value: unknown): CommitRequestBody {
  if (typeof value !== 'object' || value === null) throw invalidArgument('body', 'expected a JSON object');
  const v = value as Record<string, unknown>;
  const descriptor = validateShuffleDescriptor(v['descriptor'], undefined, 'descriptor');
  const sizes = v['subpartitionBytes'];
  if (!Array.isArray(sizes) || sizes.length < 1 || sizes.length > MAX_SUBPARTITIONS) {
    throw invalidArgument('subpartitionBytes', 'expected an array with one size per subpartition');
  }
  for (let i = 0; i < sizes.length; i++) validateInteger(`subpartitionBytes[${i}]`, sizes[i], 0, Number.MAX_SAFE_INTEGER);
  if (v['replica'] !== undefined && typeof v['replica'] !== 'boolean') throw invalidArgument('replica', 'expected a boolean');
  return { descriptor, subpartitionBytes: sizes as number[], ...(v['replica'] === true ? { replica: true } : {}) };
}

/** Checks a committed partition read back from disk, Redis or a server; SHF_ERR_INVALID_ARGUMENT naming the field. */
export function validateCommittedPartition(value: unknown, field = 'partition'): CommittedPartition {
  if (typeof value !== 'object' || value === null) throw invalidArgument(field, 'expected an object');
  const v = value as Record<string, unknown>;
  validateId(`${field}.jobId`, v['jobId']);
  validateId(`${field}.partitionId`, v['partitionId']);
  validateId(`${field}.serverId`, v['serverId']);
  validateInteger(`${field}.attempt`, v['attempt'], 0, 2 ** 31 - 1);
  validateShuffleDescriptor(v['descriptor'], undefined, `${field}.descriptor`);
  for (const key of ['numberOfSubpartitions', 'numberOfRegions', 'indexOffset', 'indexLength', 'objectBytes', 'totalBytes', 'committedAtMs']) {
    validateInteger(`${field}.${key}`, v[key], 0, Number.MAX_SAFE_INTEGER);
  }
  if (typeof v['persistent'] !== 'boolean') throw invalidArgument(`${field}.persistent`, 'expected a boolean');
  const sizes = v['subpartitionBytes'];
  if (!Array.isArray(sizes) || sizes.length !== v['numberOfSubpartitions'] || !sizes.every((n) => Number.isSafeInteger(n) && n >= 0)) {
    throw invalidArgument(`${field}.subpartitionBytes`, 'expected one non-negative integer per subpartition');
  }
  if (typeof v['objectKey'] !== 'string' || v['objectKey'] === '') throw invalidArgument(`${field}.objectKey`, 'expected a key');
  checkKey(v['objectKey']);
  if (typeof v['tiered'] !== 'boolean') throw invalidArgument(`${field}.tiered`, 'expected a boolean');
  return value as CommittedPartition;
}
