import { type ShuffleDescriptor, invalidArgument, validateId, validateShuffleDescriptor } from '@weft/shuffle-api';

/** The id every descriptor of this shuffle carries. */
export const REMOTE_SHUFFLE_SERVICE_ID = 'remote';

/** The `details` of a descriptor: the layout version, so a future format is told apart. */
export const REMOTE_DESCRIPTOR_DETAILS = Object.freeze({ layout: 'sort-merge', version: 1 });

/**
 * Checks an untrusted descriptor for this shuffle: shape (SHF_ERR_INVALID_ARGUMENT naming the field), a
 * persisted partition type, and every id that becomes part of a key.
 */
export function checkRemoteDescriptor(value: unknown, field = 'descriptor'): ShuffleDescriptor {
  const descriptor = validateShuffleDescriptor(value, REMOTE_SHUFFLE_SERVICE_ID, field);
  const type = descriptor.partition.partitionType;
  if (type !== 'BLOCKING' && type !== 'BLOCKING_PERSISTENT') {
    throw invalidArgument(`${field}.partition.partitionType`, `the remote shuffle stores BLOCKING and BLOCKING_PERSISTENT partitions, not ${type}`);
  }
  validateId(`${field}.producer.producerId`, descriptor.producer.producerId);
  return descriptor;
}
