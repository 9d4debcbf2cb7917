import type { Clock, Logger } from '@weft/shuffle-api';
import type { RedisCommitIndex } from '../coordinator/redis-commit-index.js';
import type { PartitionStore } from './partition-store.js';
import type { ServerMetrics } from './server-metrics.js';
import type { ServerTier } from './server-tier.js';
import type { ResolvedShuffleServerOptions } from './shuffle-server-options.js';

/** What the request handlers share: the server's stores, options and metrics. */
export interface ServerContext {
  readonly options: ResolvedShuffleServerOptions;
  readonly store: PartitionStore;
  readonly metrics: ServerMetrics;
  readonly logger: Logger;
  readonly clock: Clock;
  /** The S3 tier, when configured. */
  readonly tier: ServerTier | undefined;
  /** The cluster-wide commit index, when the server has Redis. */
  readonly commitIndex: RedisCommitIndex | undefined;
  /** Buffer bytes one stream may use now: streamMemoryBytes shared by the streams in flight. */
  streamShareBytes(): number;
}

/** Smallest buffer a stream is ever given, however many share the memory. */
export const MIN_STREAM_BUFFER_BYTES = 16 * 1024;
