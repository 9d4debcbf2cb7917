import {
  DEFAULT_BUFFER_SIZE_BYTES,
  DEFAULT_MAX_RECORD_BYTES,
  invalidConfig,
  isShuffleError,
  validateBufferSize,
  validateInteger,
  validateMaxRecordBytes,
} from '@weft/shuffle-api';

/** Options of the in-memory shuffle; every field is optional. */
export interface MemoryShuffleOptions {
  /** Size of one network buffer. @defaultValue 32768 */
  readonly bufferSizeBytes?: number;
  /**
   * Buffers one pipelined partition may hold (its local pool): full buffers not yet consumed, buffers being
   * filled, and buffers the consumer is reading. Raised to `numberOfSubpartitions + 1` when smaller.
   * This bounds producer memory: `buffersPerPartition * bufferSizeBytes`. @defaultValue 64
   */
  readonly buffersPerPartition?: number;
  /** Exclusive credits of each input channel: buffers it accepts ahead of reading. @defaultValue 2 */
  readonly buffersPerChannel?: number;
  /** Floating credits of each input gate, lent to channels with a backlog. @defaultValue 8 */
  readonly floatingBuffersPerGate?: number;
  /** Largest record accepted. @defaultValue 268435456 (256 MiB) */
  readonly maxRecordBytes?: number;
  /**
   * Flink's `execution.buffer-timeout`: a pipelined partition's partly filled buffer is handed to its
   * consumer once it is about this old, so a slow or live stream's records never wait for a full buffer;
   * 0 hands over every record at once (lowest latency, one buffer per record). Blocking partitions ignore it.
   * @defaultValue 100
   */
  readonly flushTimeoutMs?: number;
  /**
   * PIPELINED_APPROXIMATE: the most bytes each subpartition keeps of what was written to it since the
   * barrier of the latest checkpoint its producer saw complete (its upstream backup,
   * ApproximateReplayLog), so that a consumer restarted from that checkpoint is served again from the
   * record its restored state read up to and loses nothing; past it the oldest go, and a consumer whose
   * position went with them loses what FLIP-135 loses. Weft's own (Flink's approximate recovery keeps
   * nothing); 0 keeps nothing. Other partition types ignore it. @defaultValue 1048576 (1 MiB)
   */
  readonly approximateReplayBytes?: number;
}

export const DEFAULT_MEMORY_SHUFFLE_OPTIONS: Required<MemoryShuffleOptions> = Object.freeze({
  bufferSizeBytes: DEFAULT_BUFFER_SIZE_BYTES,
  buffersPerPartition: 64,
  buffersPerChannel: 2,
  floatingBuffersPerGate: 8,
  maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
  flushTimeoutMs: 100,
  approximateReplayBytes: 1_048_576,
});

/**
 * Fills in defaults and checks every field once; throws SHF_ERR_INVALID_CONFIG naming the option. An
 * option this shuffle does not know (a typo such as `bufferSize`) is refused, naming it, rather than ignored.
 */
export function resolveMemoryShuffleOptions(options: MemoryShuffleOptions = {}): Required<MemoryShuffleOptions> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw invalidConfig('options', `expected an object of memory shuffle options, got ${Array.isArray(options) ? 'an array' : options === null ? 'null' : typeof options}`);
  }
  for (const key of Object.keys(options)) {
    if (!Object.hasOwn(DEFAULT_MEMORY_SHUFFLE_OPTIONS, key)) {
      throw invalidConfig(key, `unknown memory shuffle option; the options are ${Object.keys(DEFAULT_MEMORY_SHUFFLE_OPTIONS).join(', ')}`);
    }
  }
  // an option given as undefined takes its default, as an absent one does
  const given = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const resolved: Required<MemoryShuffleOptions> = { ...DEFAULT_MEMORY_SHUFFLE_OPTIONS, ...given };
  const check = (name: keyof MemoryShuffleOptions, validate: () => unknown): void => {
    try {
      validate();
    } catch (error) {
      throw isShuffleError(error) ? invalidConfig(name, error.message.replace(/^invalid [^:]+: /, ''), error) : error;
    }
  };
  check('bufferSizeBytes', () => validateBufferSize('bufferSizeBytes', resolved.bufferSizeBytes));
  check('buffersPerPartition', () => validateInteger('buffersPerPartition', resolved.buffersPerPartition, 2, 1_000_000));
  check('buffersPerChannel', () => validateInteger('buffersPerChannel', resolved.buffersPerChannel, 1, 1_000_000));
  check('floatingBuffersPerGate', () => validateInteger('floatingBuffersPerGate', resolved.floatingBuffersPerGate, 0, 1_000_000));
  check('maxRecordBytes', () => validateMaxRecordBytes('maxRecordBytes', resolved.maxRecordBytes));
  check('flushTimeoutMs', () => validateInteger('flushTimeoutMs', resolved.flushTimeoutMs, 0, 2_147_483_647));
  check('approximateReplayBytes', () => validateInteger('approximateReplayBytes', resolved.approximateReplayBytes, 0, Number.MAX_SAFE_INTEGER));
  return resolved;
}
