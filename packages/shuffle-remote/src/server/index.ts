export { ShuffleServer, startShuffleServer } from './shuffle-server.js';
export {
  DEFAULT_SHUFFLE_SERVER_OPTIONS,
  resolveShuffleServerOptions,
  type ResolvedShuffleServerOptions,
  type ShuffleServerOptions,
  type ShuffleServerTierOptions,
  type TierMode,
} from './shuffle-server-options.js';
export { createJobToken } from '../protocol/job-token.js';
export type { CommittedPartition } from '../protocol/committed-partition.js';
