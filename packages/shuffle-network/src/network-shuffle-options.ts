import {
  DEFAULT_BUFFER_SIZE_BYTES,
  DEFAULT_MAX_RECORD_BYTES,
  invalidConfig,
  isShuffleError,
  validateBufferSize,
  validateInteger,
  validateMaxRecordBytes,
} from '@weft/shuffle-api';

/** Options of the network shuffle; every field is optional. The same options serve masters and environments. */
export interface NetworkShuffleOptions {
  /** Address an environment's partition server listens on. @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** Port an environment's partition server listens on; 0 picks a free one. @defaultValue 0 */
  readonly port?: number;
  /** Host put in descriptors for consumers to connect to (when `host` is `0.0.0.0`, say). @defaultValue '' (use `host`) */
  readonly advertisedHost?: string;
  /** Size of one network buffer. @defaultValue 32768 */
  readonly bufferSizeBytes?: number;
  /**
   * Buffers one PIPELINED_BOUNDED partition's pool holds (raised to `numberOfSubpartitions + 1`): buffers
   * being filled, queued, and on their way to the socket. The producer waits once they are used. @defaultValue 64
   */
  readonly buffersPerPartition?: number;
  /**
   * Buffers one PIPELINED partition's pool may hold. The type promises no bound, so this is a cap that keeps
   * memory finite, not a tight budget. @defaultValue 1024 (32 MiB at the default buffer size)
   */
  readonly maxBuffersPerPipelinedPartition?: number;
  /** Exclusive buffers (credits) of each input channel, announced when the channel opens. @defaultValue 2 */
  readonly buffersPerChannel?: number;
  /** Floating buffers of each input gate, lent to channels whose producer announces a backlog. @defaultValue 8 */
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
   * record its restored state read up to (`CreateInputGateRequest.resumeFrom`) and loses nothing; past it
   * the oldest go, and a consumer whose position went with them loses what FLIP-135 loses. Weft's own
   * (Flink's approximate recovery keeps nothing); 0 keeps nothing. Other types ignore it. @defaultValue 1048576 (1 MiB)
   */
  readonly approximateReplayBytes?: number;
  /** How long opening a TCP connection to a peer may take. @defaultValue 10000 */
  readonly connectTimeoutMs?: number;
  /**
   * How long a gate's PIPELINED_APPROXIMATE channel whose producer went away (it delivered
   * `channel-unavailable`) waits for the job master to name a new attempt (`InputGate.updatePartitionInfo`)
   * before the gate's read fails with SHF_ERR_TIMEOUT (retryable) naming the partition. The default is
   * Flink's `heartbeat.timeout` (50 s, in which a job master notices a lost task executor) plus 10 s for the restart. @defaultValue 60000
   */
  readonly reconnectTimeoutMs?: number;
  /** How long a master's control request (register, release) to a task executor may take. @defaultValue 30000 */
  readonly requestTimeoutMs?: number;
  /** Addresses of task executors known up front, `{ "<taskExecutorId>": "host:port" }`. @defaultValue {} */
  readonly taskExecutors?: Readonly<Record<string, string>>;
}

export type ResolvedNetworkShuffleOptions = Required<NetworkShuffleOptions>;

export const DEFAULT_NETWORK_SHUFFLE_OPTIONS: ResolvedNetworkShuffleOptions = Object.freeze({
  host: '127.0.0.1',
  port: 0,
  advertisedHost: '',
  bufferSizeBytes: DEFAULT_BUFFER_SIZE_BYTES,
  buffersPerPartition: 64,
  maxBuffersPerPipelinedPartition: 1024,
  buffersPerChannel: 2,
  floatingBuffersPerGate: 8,
  maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
  flushTimeoutMs: 100,
  approximateReplayBytes: 1_048_576,
  connectTimeoutMs: 10_000,
  reconnectTimeoutMs: 60_000,
  requestTimeoutMs: 30_000,
  taskExecutors: Object.freeze({}),
});

/** `host:port` → its parts; throws SHF_ERR_INVALID_CONFIG naming `setting`. */
export function parseAddress(setting: string, value: unknown): { host: string; port: number } {
  const match = typeof value === 'string' ? /^(.+):(\d{1,5})$/.exec(value) : null;
  const port = match === null ? NaN : Number(match[2]);
  if (match === null || port < 1 || port > 65_535) throw invalidConfig(setting, `expected "host:port", got ${JSON.stringify(value)}`);
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}

/**
 * Fills in defaults and checks every field once; throws SHF_ERR_INVALID_CONFIG naming the option. An unknown
 * option (a typo) is refused, naming it; an option given as undefined takes its default.
 */
export function resolveNetworkShuffleOptions(options: NetworkShuffleOptions = {}): ResolvedNetworkShuffleOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw invalidConfig('options', `expected an object of network shuffle options, got ${Array.isArray(options) ? 'an array' : options === null ? 'null' : typeof options}`);
  }
  for (const key of Object.keys(options)) {
    if (!Object.hasOwn(DEFAULT_NETWORK_SHUFFLE_OPTIONS, key)) {
      throw invalidConfig(key, `unknown network shuffle option; the options are ${Object.keys(DEFAULT_NETWORK_SHUFFLE_OPTIONS).join(', ')}`);
    }
  }
  const given = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const resolved: ResolvedNetworkShuffleOptions = { ...DEFAULT_NETWORK_SHUFFLE_OPTIONS, ...given };
  const check = (name: keyof NetworkShuffleOptions, validate: () => unknown): void => {
    try {
      validate();
    } catch (error) {
      throw isShuffleError(error) && error.code !== 'SHF_ERR_INVALID_CONFIG' ? invalidConfig(name, error.message.replace(/^invalid [^:]+: /, ''), error) : error;
    }
  };
  const nonEmpty = (name: 'host' | 'advertisedHost', allowEmpty: boolean): void => {
    const value = resolved[name];
    if (typeof value !== 'string' || (!allowEmpty && value === '')) throw invalidConfig(name, `expected a host name or address, got ${JSON.stringify(value)}`);
  };
  nonEmpty('host', false);
  nonEmpty('advertisedHost', true);
  check('port', () => validateInteger('port', resolved.port, 0, 65_535));
  check('bufferSizeBytes', () => validateBufferSize('bufferSizeBytes', resolved.bufferSizeBytes));
  check('buffersPerPartition', () => validateInteger('buffersPerPartition', resolved.buffersPerPartition, 2, 1_000_000));
  check('maxBuffersPerPipelinedPartition', () => validateInteger('maxBuffersPerPipelinedPartition', resolved.maxBuffersPerPipelinedPartition, 2, 1_000_000));
  check('buffersPerChannel', () => validateInteger('buffersPerChannel', resolved.buffersPerChannel, 1, 1_000_000));
  check('floatingBuffersPerGate', () => validateInteger('floatingBuffersPerGate', resolved.floatingBuffersPerGate, 0, 1_000_000));
  check('maxRecordBytes', () => validateMaxRecordBytes('maxRecordBytes', resolved.maxRecordBytes));
  check('flushTimeoutMs', () => validateInteger('flushTimeoutMs', resolved.flushTimeoutMs, 0, 2_147_483_647));
  check('approximateReplayBytes', () => validateInteger('approximateReplayBytes', resolved.approximateReplayBytes, 0, Number.MAX_SAFE_INTEGER));
  check('connectTimeoutMs', () => validateInteger('connectTimeoutMs', resolved.connectTimeoutMs, 1, 2 ** 31 - 1));
  check('reconnectTimeoutMs', () => validateInteger('reconnectTimeoutMs', resolved.reconnectTimeoutMs, 1, 2 ** 31 - 1));
  check('requestTimeoutMs', () => validateInteger('requestTimeoutMs', resolved.requestTimeoutMs, 1, 2 ** 31 - 1));
  const executors = resolved.taskExecutors;
  if (typeof executors !== 'object' || executors === null || Array.isArray(executors)) {
    throw invalidConfig('taskExecutors', 'expected an object of "<taskExecutorId>": "host:port"');
  }
  for (const [id, address] of Object.entries(executors)) parseAddress(`taskExecutors.${id}`, address);
  return Object.freeze({ ...resolved, taskExecutors: Object.freeze({ ...executors }) });
}
