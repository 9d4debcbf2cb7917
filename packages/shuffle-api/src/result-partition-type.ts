import { invalidArgument } from './shuffle-error.js';

/**
 * How a result partition is produced and consumed (Flink's ResultPartitionType).
 *
 * - PIPELINED: consumed while produced, once. The type does not promise a bound on in-flight buffers
 *   (`bounded: false`; Flink's PIPELINED pool may grow); an implementation may still bound it (the
 *   in-memory shuffle bounds both pipelined types by the same credits and pool; see its README).
 * - PIPELINED_BOUNDED: PIPELINED that promises a bounded number of in-flight buffers.
 * - PIPELINED_APPROXIMATE: bounded pipelined data that may be consumed again after a restart with loss.
 * - BLOCKING: fully produced before it is consumed; re-readable until the scheduler releases it.
 * - BLOCKING_PERSISTENT: BLOCKING that also outlives the job (released only explicitly).
 * - HYBRID_FULL / HYBRID_SELECTIVE: may be consumed while produced or after; FULL keeps all data for
 *   re-reading, SELECTIVE spills only what was not consumed and so cannot be re-read.
 */
export const ResultPartitionType = {
  PIPELINED: 'PIPELINED',
  PIPELINED_BOUNDED: 'PIPELINED_BOUNDED',
  PIPELINED_APPROXIMATE: 'PIPELINED_APPROXIMATE',
  BLOCKING: 'BLOCKING',
  BLOCKING_PERSISTENT: 'BLOCKING_PERSISTENT',
  HYBRID_FULL: 'HYBRID_FULL',
  HYBRID_SELECTIVE: 'HYBRID_SELECTIVE',
} as const;

export type ResultPartitionType = (typeof ResultPartitionType)[keyof typeof ResultPartitionType];

export const RESULT_PARTITION_TYPES: readonly ResultPartitionType[] = Object.values(ResultPartitionType);

export interface ResultPartitionTypeProperties {
  /** Producer and consumer must run at the same time: the edge joins them into one pipelined region. */
  readonly mustBePipelined: boolean;
  /** The consumer may start before the producer finishes. */
  readonly canBePipelined: boolean;
  /** The data can be read again (by a restarted consumer) until released. */
  readonly reconsumable: boolean;
  /** The data outlives the job; only an explicit release removes it. */
  readonly persistent: boolean;
  /** In-flight data is promised to be bounded by a fixed number of buffers (false: not promised, an implementation may still bound it). */
  readonly bounded: boolean;
  /** Who releases it: `upstream` after its one consumption, or the `scheduler`. */
  readonly releasedBy: 'upstream' | 'scheduler';
}

const PROPERTIES: Readonly<Record<ResultPartitionType, ResultPartitionTypeProperties>> = {
  PIPELINED: { mustBePipelined: true, canBePipelined: true, reconsumable: false, persistent: false, bounded: false, releasedBy: 'upstream' },
  PIPELINED_BOUNDED: { mustBePipelined: true, canBePipelined: true, reconsumable: false, persistent: false, bounded: true, releasedBy: 'upstream' },
  PIPELINED_APPROXIMATE: { mustBePipelined: false, canBePipelined: true, reconsumable: false, persistent: false, bounded: true, releasedBy: 'upstream' },
  BLOCKING: { mustBePipelined: false, canBePipelined: false, reconsumable: true, persistent: false, bounded: false, releasedBy: 'scheduler' },
  BLOCKING_PERSISTENT: { mustBePipelined: false, canBePipelined: false, reconsumable: true, persistent: true, bounded: false, releasedBy: 'scheduler' },
  HYBRID_FULL: { mustBePipelined: false, canBePipelined: true, reconsumable: true, persistent: false, bounded: false, releasedBy: 'scheduler' },
  HYBRID_SELECTIVE: { mustBePipelined: false, canBePipelined: true, reconsumable: false, persistent: false, bounded: false, releasedBy: 'scheduler' },
};

export function isResultPartitionType(value: unknown): value is ResultPartitionType {
  return typeof value === 'string' && Object.hasOwn(PROPERTIES, value);
}

/** The properties of a partition type; throws SHF_ERR_INVALID_ARGUMENT for an unknown one. */
export function resultPartitionTypeProperties(type: ResultPartitionType): ResultPartitionTypeProperties {
  if (!isResultPartitionType(type)) {
    throw invalidArgument('partitionType', `unknown result partition type ${JSON.stringify(type)}; expected one of ${RESULT_PARTITION_TYPES.join(', ')}`);
  }
  return PROPERTIES[type];
}
