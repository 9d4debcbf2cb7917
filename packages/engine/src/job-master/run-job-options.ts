import type { Logger } from '@weft/shuffle-api';
import type { AdaptiveBatchOptions } from '../adaptive/adaptive-batch-options.js';
import type { JobDefinition } from '../api/define-job.js';
import type { ExchangeMode } from '../api/exchange-mode.js';
import type { CheckpointingOptions } from '../checkpoint/checkpointing-options.js';
import type { JobEventLog } from '../event-log/job-event-log.js';
import type { PrestartedWorkers } from '../executor/prestarted-workers.js';
import type { TaskExecutorProvider } from '../executor/task-executor-provider.js';
import type { FailoverStrategyName } from '../failover/failover-strategy.js';
import type { FaultInjectorFactory } from '../faults/fault-injector.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { StreamConnector } from '../io/stream-connector.js';
import type { RestartStrategyOptions } from '../restart/restart-backoff-time-strategy.js';
import type { SerializerName } from '../serialization/serializers.js';
import type { FailoverRecord } from './failover-record.js';
import type { JobEventListener } from './job-events.js';
import type { JobProgress } from './job-progress.js';
import type { JobShuffleServices } from './job-session.js';

/** runJob's options: the job, where it runs, its shuffles, and how it recovers, logs and reports. */
export interface RunJobOptions {
  /** A job module path (relative to `cwd`) or file URL, or — in-process only — a `defineJob` result. */
  readonly job: string | URL | JobDefinition;
  /** The job's arguments (`ctx.args`). @defaultValue [] */
  readonly args?: readonly string[];
  /** Default operator parallelism. @defaultValue os.availableParallelism() */
  readonly parallelism?: number;
  /** @defaultValue the job's own, else 'ALL_EDGES_PIPELINED' with `checkpointing`, else 'ALL_EDGES_BLOCKING' */
  readonly exchangeMode?: ExchangeMode;
  /**
   * `inprocess`: regions run in this process; `workers`: in a pool of worker processes; a
   * TaskExecutorProvider: on the executors it provides (e.g. `@weft/cluster`'s, on other hosts; the
   * runJob does not close it, the job's end does). @defaultValue 'inprocess'
   */
  readonly executor?: 'inprocess' | 'workers' | TaskExecutorProvider;
  /** Worker processes of the pool. @defaultValue os.availableParallelism() */
  readonly workers?: number;
  /** Regions one executor runs at once. @defaultValue 1 per worker; os.availableParallelism() in process */
  readonly slotsPerExecutor?: number;
  readonly shuffle: JobShuffleServices;
  /** @defaultValue { type: 'none' } — the first failure fails the job */
  readonly restartStrategy?: RestartStrategyOptions;
  /** Which tasks a failure restarts: `region` (its pipelined region and what depends on it), `all`, or `individual` (only the failed task; jobs whose tasks exchange no data). @defaultValue 'region' */
  readonly failoverStrategy?: FailoverStrategyName;
  /** The record serializer, by name, unless the job brings its own (`defineJob(…, { serializer })`). @defaultValue 'default' */
  readonly serializer?: SerializerName;
  /** @defaultValue a fresh unique id */
  readonly jobId?: string;
  /** Relative paths (job module, inputs, outputs) resolve against this. @defaultValue process.cwd() */
  readonly cwd?: string;
  readonly logger?: Logger;
  /** Called every `progressIntervalMs` while the job runs. */
  readonly onProgress?: (progress: JobProgress) => void;
  /** @defaultValue 250 */
  readonly progressIntervalMs?: number;
  /**
   * How often the job's progress is published to its event log while it runs (`JobLog.publishProgress`,
   * when the log has it): what a UI in another process (`weft ui --meta …`) shows as live counters.
   * @defaultValue PROGRESS_PUBLISH_INTERVAL_MS (1000)
   */
  readonly progressPublishIntervalMs?: number;
  /**
   * Called at each failover, as it happens (once its tasks are chosen, before they are cancelled): the
   * same record `JobResult.failovers` lists at the end. Exceptions it throws are logged and ignored.
   */
  readonly onFailover?: (failover: FailoverRecord) => void;
  /** Aborting fails the job (running tasks are cancelled, nothing is published). */
  readonly signal?: AbortSignal;
  /** Node options of worker processes. @defaultValue process.execArgv (so `--import tsx` carries over) */
  readonly workerExecArgv?: readonly string[];
  /** Worker processes forked ahead (`prestartWorkers`), taken over by this job. */
  readonly prestartedWorkers?: PrestartedWorkers;
  /** @defaultValue 1000 */
  readonly heartbeatIntervalMs?: number;
  /**
   * A worker silent for this long is killed and declared lost. Heartbeats stop while a user function runs
   * synchronously, so keep it above the longest single call of one. @defaultValue 30000
   */
  readonly heartbeatTimeoutMs?: number;
  /** Tasks still running this long after their cancellation get their worker process killed. @defaultValue 30000 */
  readonly cancelTimeoutMs?: number;
  /** Start a new worker process in place of each one lost (workers only). @defaultValue true */
  readonly replaceLostWorkers?: boolean;
  /** Fault injection (tests, `weft run --inject-faults`): called once the job is planned. */
  readonly faults?: FaultInjectorFactory;
  /**
   * Release a blocking result's partitions as soon as every pipelined region consuming them finished
   * (Flink's RegionPartitionGroupReleaseStrategy, `jobmanager.partition.release-during-job-execution`),
   * so a job holds only the shuffle data still to be read; a later failover that needs a released
   * partition re-runs its producer. BLOCKING_PERSISTENT partitions are never released. Off: everything
   * stays until the job ends. @defaultValue true
   */
  readonly releasePartitionsDuringJob?: boolean;
  /**
   * Told of every transition of the job, as it happens and in causal order (JobEvent: `job-submitted`,
   * `vertex-initialized`, `task-deployed`, `task-finished`, … `job-finished`) — where a durable job event
   * log plugs in. When it returns a promise, a finished task counts (its partitions readable, its
   * consumers scheduled) only once that promise resolved, and the job's end waits for every promise. A
   * listener that throws or rejects fails the job (`WEFT_ERR_JOB_FAILED` with a `WEFT_ERR_EVENT_LOG`
   * cause). @defaultValue none
   */
  readonly eventListener?: JobEventListener;
  /**
   * The durable job event log (docs/DESIGN.md contract 7; the CLI's `--meta` store). The job's log is
   * opened — its lease taken, whose epoch every partition registration carries — before anything is
   * registered, and every event is appended (a task counts as finished once its append is durable; a
   * failed or fenced append fails the job). When it holds an unfinished run of `jobId`, the run resumes
   * it: finished tasks whose partitions still exist are not run again. A finished run, or one submitted
   * with another job module or other arguments, is refused (`WEFT_ERR_RESUME_REFUSED`). The caller owns
   * it (runJob never closes it). @defaultValue none: nothing is logged, nothing resumed
   */
  readonly eventLog?: JobEventLog;
  /**
   * Where job inputs and outputs named by `<scheme>://…` URLs live (e.g. `s3://bucket/key`): one
   * ExternalFileSystem per scheme; plain paths and `file://` URLs stay local. Worker processes rebuild
   * each from its `reference`. The caller owns them (runJob never closes them). @defaultValue [] (local paths only)
   */
  readonly fileSystems?: readonly ExternalFileSystem[];
  /**
   * Where stream sources (`ctx.readRedisStream(url, …)`) read: one StreamConnector per URL scheme family
   * (the CLI hands `@weft/job-store`'s RedisStreamConnector). Worker processes and a provider's executors
   * rebuild each from its `reference`; a job whose stream source reads through one without a reference is
   * refused on them before it runs (WEFT_ERR_INVALID_ARGUMENT, field `streamConnectors[i]`).
   * The caller owns them (runJob never closes them). @defaultValue [] (a stream source then fails with
   * WEFT_ERR_SOURCE_UNAVAILABLE)
   */
  readonly streamConnectors?: readonly StreamConnector[];
  /**
   * Each task's managed memory (Flink's managed memory per slot): a budget in bytes of serialized data,
   * shared by the task's operators. A sort or a keyed aggregation that fills it spills sorted runs to
   * `spillDir` and merges them at the end; a map-side combiner emits what it holds early. At least
   * MIN_TASK_MEMORY_BYTES (64 KiB), else WEFT_ERR_INVALID_ARGUMENT (field `taskMemoryBytes`) before
   * anything runs. @defaultValue defaultTaskMemoryBytes() on each executor's machine: a quarter of the
   * smaller of its memory and its V8 heap limit, divided by its cores
   */
  readonly taskMemoryBytes?: number;
  /**
   * The directory tasks make their spill directories in (`weft-spill-<job>-<attempt>-*`, removed when the task
   * ends, however it ends). On a cluster it must exist on every executor's host. @defaultValue os.tmpdir()
   * of each executor
   */
  readonly spillDir?: string;
  /**
   * Decide the parallelism of operators without an explicit one at run time (`weft run --parallelism auto`;
   * Flink's adaptive batch scheduler): `true` for Flink's defaults, or the bounds and volume per task
   * (AdaptiveBatchOptions). Text sources get a parallelism from their input's size; every other such
   * operator is decided once its producers finished, from the bytes they wrote per subpartition
   * (`decideParallelismAndInputInfos`), and reads its decided ranges. Every edge into or out of such an
   * operator is BLOCKING. The decisions are logged (`vertex-initialized`) and reused by a resumed run.
   * Not on a TaskExecutorProvider's executors (cluster) yet. @defaultValue none: `parallelism` for all
   */
  readonly adaptive?: AdaptiveBatchOptions | true;
  /**
   * Take checkpoints (a streaming job; `weft run --checkpoint-interval`): the job master triggers one
   * every `intervalMs`, its sources inject barriers, every task aligns them (or tracks them, at-least-once),
   * snapshots its operators' state to `storage` and acknowledges; a checkpoint is completed once the
   * CheckpointStore recorded it. A failed task's region restarts from the latest completed checkpoint
   * (sources rewind, keyed and operator state restored). The job then runs with every edge pipelined
   * (`exchangeMode` defaults to the job's own, else ALL_EDGES_PIPELINED), in process, on local worker processes or on a provider's
   * executors that relay checkpoint messages (TaskExecutorProvider.relaysCheckpoints; others are refused), and its
   * sources must be checkpointable (`ctx.generate`). @defaultValue none: no checkpoints (a batch job)
   */
  readonly checkpointing?: CheckpointingOptions;
  /**
   * An approximate job (`exchangeMode` ALL_EDGES_PIPELINED_APPROXIMATE): how long a task deployed again after
   * a failure waits for each of its approximate input partitions before it fails
   * (WEFT_ERR_APPROXIMATE_RECONNECT_TIMEOUT, through the ordinary failover path). On worker processes
   * over a network shuffle, a channel whose producer went away waits for its new attempt as long as that
   * shuffle's own option says (the network shuffle's `reconnectTimeoutMs`; `weft run` sets it to this). @defaultValue 10000
   */
  readonly approximateReconnectTimeoutMs?: number;
}
