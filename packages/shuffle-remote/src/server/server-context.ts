import type { Clock, Logger } from '@weft/shuffle-api';
import type { CommitClaimant, RedisCommitIndex } from '../coordinator/redis-commit-index.js';
import type { ServerFaultPoint } from '../coordinator/server-fault-points.js';
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
  /** This process, as it claims commits in the index (its registry record's pid and start time). */
  readonly claimant: CommitClaimant;
  /**
   * A fault point (fault tests only, `faultHooks`): resolves at once unless a fault is armed here for
   * the partition — then the process SIGKILLs itself (never resolves) or SIGSTOPs itself (resolves once
   * continued). Undefined when fault hooks are off.
   */
  readonly faultPoint: ((point: ServerFaultPoint, jobId: string, partitionId: string) => Promise<void>) | undefined;
  /** Buffer bytes one stream may use now: streamMemoryBytes shared by the streams in flight. */
  streamShareBytes(): number;
}

/** Smallest buffer a stream is ever given, however many share the memory. */
export const MIN_STREAM_BUFFER_BYTES = 16 * 1024;
