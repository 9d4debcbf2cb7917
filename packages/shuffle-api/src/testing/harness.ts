import type { ResultPartitionType } from '../result-partition-type.js';
import type { ShuffleEnvironment } from '../shuffle-environment.js';
import type { ShuffleMaster } from '../shuffle-master.js';

/**
 * One fresh instance of the implementation under test. The suite calls `createHarness` for every test
 * and `close()` after it, whatever happened.
 */
export interface ConformanceHarness {
  /** Already started. */
  readonly master: ShuffleMaster;
  /** Where writers are created. */
  readonly producerEnvironment: ShuffleEnvironment;
  /** Where input gates are created; may be the same object as `producerEnvironment`. */
  readonly consumerEnvironment: ShuffleEnvironment;
  /**
   * A new, started master on the same backends as `master` (a new job master after JobMaster failover),
   * closed by the harness's `close()`. The suite checks that it lists exactly what `master` committed.
   * Omit it only where no second master can see the first one's partitions; those cases are then skipped.
   */
  createMaster?(): Promise<ShuffleMaster>;
  /** Closes environments, master(s) and whatever else the harness opened. Idempotent. */
  close(): Promise<void>;
}

export interface ConformanceOptions {
  /** Names the implementation in test titles. */
  readonly name: string;
  readonly createHarness: () => Promise<ConformanceHarness>;
  /** The partition types the implementation supports; each data test runs once per type. */
  readonly partitionTypes: readonly ResultPartitionType[];
  /** Per-test timeout. @defaultValue 120_000 */
  readonly timeoutMs?: number;
  /** Size of the large-record test. @defaultValue 10 MiB */
  readonly largeRecordBytes?: number;
  /** Bytes the slow-consumer test pushes through one partition. @defaultValue 24 MiB */
  readonly backpressureBytes?: number;
  /**
   * The largest record the harness's writers accept (the implementation's `maxRecordBytes` as the harness
   * configures it); one byte more must be refused. @defaultValue DEFAULT_MAX_RECORD_BYTES (256 MiB)
   */
  readonly maxRecordBytes?: number;
}
