import { type ShuffleDescriptor, invalidArgument, validateId, validateShuffleDescriptor } from '@weft/shuffle-api';

/** The id every descriptor of the shuffle-server shuffle carries. */
export const SHUFFLE_SERVER_SERVICE_ID = 'shuffle-server';

/** One shuffle server, as a descriptor names it. */
export interface ServerLocation {
  readonly serverId: string;
  readonly url: string;
}

/** Most servers a descriptor lists in `replicas` or in `spares`. */
export const MAX_LISTED_SERVERS = 16;

/**
 * `details` of a shuffle-server descriptor: where the partition lives and the job token that opens it.
 * `replicas` and `spares` are optional (descriptors without them stay valid): every replica holds a
 * copy of the same bytes, committed along with the primary's; a spare is where a writer whose server
 * died moves the partition, so readers look there too.
 */
export interface ServerPartitionDetails extends ServerLocation {
  /** HMAC of the job id under the shared secret: environments need no secret. */
  readonly token: string;
  /** Other servers holding a copy (`--shuffle-replicas`), on other hosts where the pool allows. */
  readonly replicas?: readonly ServerLocation[];
  /** Live servers a writer may re-place the partition on if its server dies, other hosts first. */
  readonly spares?: readonly ServerLocation[];
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
  for (const list of ['replicas', 'spares'] as const) {
    const value = details[list];
    if (value === undefined) continue;
    if (!Array.isArray(value) || value.length > MAX_LISTED_SERVERS) throw invalidArgument(`${field}.details.${list}`, `expected at most ${MAX_LISTED_SERVERS} {serverId, url}`);
    value.forEach((server: unknown, i) => checkLocation(server, `${field}.details.${list}[${i}]`));
  }
  return descriptor as ShuffleDescriptor & { readonly details: ServerPartitionDetails };
}

function checkLocation(value: unknown, field: string): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidArgument(field, 'expected {serverId, url}');
  const v = value as Record<string, unknown>;
  validateId(`${field}.serverId`, v['serverId']);
  if (typeof v['url'] !== 'string' || !/^https?:\/\/[^/]+$/.test(v['url'])) throw invalidArgument(`${field}.url`, 'expected http(s)://host:port');
}

/** Primary first, then the replicas: every server that should hold a copy. */
export function copiesOf(details: ServerPartitionDetails): ServerLocation[] {
  return [{ serverId: details.serverId, url: details.url }, ...(details.replicas ?? [])];
}
