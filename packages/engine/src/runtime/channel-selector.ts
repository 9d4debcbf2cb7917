import { keyGroupForHash } from '../keygroups/key-group-range-assignment.js';
import type { PlannedEdge } from '../graph/job-plan.js';
import { keyHashCode } from './key-hash.js';
import { type TaskIdentity, userFunctionError } from './user-function-error.js';

/** Picks the subpartition (consumer channel) of a record; -1 means every subpartition (broadcast). */
export interface ChannelSelector {
  select(value: unknown): number;
}

export const BROADCAST = -1;

/**
 * The channel selector of `edge` for one producer subtask writing `subpartitions` subpartitions:
 * forward → 0; rebalance / rescale → round robin (starting at the subtask's index, so producers spread);
 * broadcast → all; hash → Flink's key-group routing (`murmurHash(hashCode(key)) % maxParallelism`, then
 * `keyGroup * consumers / maxParallelism`); custom → its function.
 */
export function createChannelSelector(edge: PlannedEdge, subpartitions: number, identity: TaskIdentity): ChannelSelector {
  const partitioning = edge.partitioning;
  switch (partitioning.type) {
    case 'forward':
      return { select: () => 0 };
    case 'rebalance':
    case 'rescale': {
      let next = identity.subtask % subpartitions;
      return {
        select: () => {
          const channel = next;
          next = next + 1 === subpartitions ? 0 : next + 1;
          return channel;
        },
      };
    }
    case 'broadcast':
      return { select: () => BROADCAST };
    case 'hash': {
      const key = partitioning.key;
      const maxParallelism = edge.maxParallelism;
      const userKey = partitioning.userKey;
      return {
        select(value) {
          let hash: number;
          try {
            hash = keyHashCode(key(value));
          } catch (error) {
            throw userFunctionError(identity, error, userKey ? 'key selector' : 'key');
          }
          const keyGroup = keyGroupForHash(hash, maxParallelism);
          return Math.floor((keyGroup * subpartitions) / maxParallelism);
        },
      };
    }
    case 'custom': {
      const select = partitioning.select;
      return {
        select(value) {
          const channel = select(value, subpartitions);
          if (!(Number.isInteger(channel) && channel >= 0 && channel < subpartitions)) {
            throw new RangeError(`partitioner of edge ${edge.id} chose channel ${channel}, outside [0, ${subpartitions})`);
          }
          return channel;
        },
      };
    }
  }
}
