import { type ShuffleDescriptor, invalidArgument, validateId, validateShuffleDescriptor } from '@weft/shuffle-api';

/** The id every descriptor of the shuffle-server shuffle carries. */
export const SHUFFLE_SERVER_SERVICE_ID = 'shuffle-server';

/** `details` of a shuffle-server descriptor: where the partition lives and the job token that opens it. */
export interface ServerPartitionDetails {
  readonly serverId: string;
  /** The server's URL when the partition was placed (readers look it up again if it moved). */
  readonly url: string;
  /** HMAC of the job id under the shared secret: environments need no secret. */
  readonly token: string;
  /** The job master epoch it was registered under (RegisterPartitionRequest.epoch), if any: servers check it at commit. */
  readonly epoch?: number;
}

/**
 * Checks an untrusted descriptor for this shuffle: shape (SHF_ERR_INVALID_ARGUMENT naming the field), a
 * persisted partition type, and its details.
 */
export function checkServerDescriptor(value: unknown, field = 'descriptor'): ShuffleDescriptor & { readonly details: ServerPartitionDetails } {
  const descriptor = validateShuffleDescriptor(value, SHUFFLE_SERVER_SERVICE_ID, field);
  const type = descriptor.partition.partitionType;
  if (type !== 'BLOCKING' && type !== 'BLOCKING_PERSISTENT') {
    throw invalidArgument(`${field}.partition.partitionType`, `the shuffle server stores BLOCKING and BLOCKING_PERSISTENT partitions, not ${type}`);
  }
  const details = descriptor.details as Record<string, unknown> | null;
  if (typeof details !== 'object' || details === null || Array.isArray(details)) throw invalidArgument(`${field}.details`, 'expected {serverId, url, token}');
  validateId(`${field}.details.serverId`, details['serverId']);
  if (typeof details['url'] !== 'string' || !/^https?:\/\/[^/]+$/.test(details['url'])) throw invalidArgument(`${field}.details.url`, 'expected http(s)://host:port');
  if (typeof details['token'] !== 'string' || details['token'].length === 0 || details['token'].length > 4096) {
    throw invalidArgument(`${field}.details.token`, 'expected a job token');
  }
  return descriptor as ShuffleDescriptor & { readonly details: ServerPartitionDetails };
}
