import { type Clock, type Logger, noopLogger, systemClock } from '@weft/shuffle-api';
import type { ResolvedRemoteShuffleOptions } from '../config/remote-shuffle-options.js';
import type { MetadataStore } from './metadata-store.js';
import { RedisMetadataStore } from './redis-metadata-store.js';
import { retryingMetadataStore } from './retrying-metadata-store.js';
import { SqliteMetadataStore } from './sqlite-metadata-store.js';

/** The MetadataStore for validated options, retrying operations while the store is unreachable. */
export function createMetadataStore(options: ResolvedRemoteShuffleOptions, logger: Logger = noopLogger, clock: Clock = systemClock): MetadataStore {
  const meta = options.meta;
  const store = meta.type === 'sqlite' ? new SqliteMetadataStore(meta, clock) : new RedisMetadataStore(meta, logger);
  return retryingMetadataStore(
    store,
    { attempts: options.metaRetryAttempts, initialDelayMs: options.metaRetryInitialDelayMs, maxDelayMs: options.metaRetryMaxDelayMs },
    logger,
  );
}
