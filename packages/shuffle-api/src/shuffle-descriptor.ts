import { type JobId, validateId } from './ids.js';
import type { JsonValue } from './json.js';
import { type PartitionDescriptor, validatePartitionDescriptor } from './partition-descriptor.js';
import { type ProducerDescriptor, validateProducerDescriptor } from './producer-descriptor.js';
import { invalidArgument } from './shuffle-error.js';

/**
 * What a ShuffleMaster returns for a registered partition, and all a ShuffleEnvironment needs to write or
 * read it (Flink's ShuffleDescriptor). Plain JSON: the engine ships it to other processes unchanged.
 *
 * `details` belongs to the implementation named by `shuffleServiceId` (a server address, a storage
 * prefix); nobody else reads it.
 */
export interface ShuffleDescriptor {
  /** The implementation that produced this descriptor, e.g. `"memory"`, `"remote"`. */
  readonly shuffleServiceId: string;
  readonly jobId: JobId;
  readonly partition: PartitionDescriptor;
  readonly producer: ProducerDescriptor;
  readonly details: JsonValue;
}

/**
 * Checks an untrusted value field by field (and, when given, that it belongs to `shuffleServiceId`);
 * throws SHF_ERR_INVALID_ARGUMENT naming the first bad field.
 */
export function validateShuffleDescriptor(
  value: unknown,
  shuffleServiceId?: string,
  field = 'descriptor',
): ShuffleDescriptor {
  if (typeof value !== 'object' || value === null) throw invalidArgument(field, 'expected an object');
  const v = value as Record<string, unknown>;
  if (typeof v['shuffleServiceId'] !== 'string') {
    throw invalidArgument(`${field}.shuffleServiceId`, 'expected a string');
  }
  if (shuffleServiceId !== undefined && v['shuffleServiceId'] !== shuffleServiceId) {
    throw invalidArgument(
      `${field}.shuffleServiceId`,
      `descriptor of ${JSON.stringify(v['shuffleServiceId'])} given to the ${JSON.stringify(shuffleServiceId)} shuffle`,
    );
  }
  validateId(`${field}.jobId`, v['jobId']);
  validatePartitionDescriptor(v['partition'], `${field}.partition`);
  validateProducerDescriptor(v['producer'], `${field}.producer`);
  if (!('details' in v)) throw invalidArgument(`${field}.details`, 'missing');
  return value as ShuffleDescriptor;
}
