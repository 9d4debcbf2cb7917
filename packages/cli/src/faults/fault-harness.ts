import { randomInt } from 'node:crypto';
import type { ShuffleDescriptor, ShuffleMaster, ShuffleServiceFactory } from '@weft/shuffle-api';
import {
  buildPipelinedRegions,
  EngineError,
  ExecutionTopology,
  type FaultInjector,
  type FaultInjectorContext,
  type FaultInjectorFactory,
  type JobEventLog,
  type RegionDeploymentRef,
  type TaskAttemptRef,
  type TaskFault,
} from '@weft/engine';
import { DEFAULT_PAUSE_MS, type FaultKind, type FaultSpec, formatFaultSpec, isCheckpointFaultKind, isServerFaultKind, SERVER_FAULT_POINTS, type ServerFaultPoint } from './fault-spec.js';
import { type JobMasterKillPoint, killingEventLog } from './job-master-kill.js';
import { SeededRandom } from './seeded-random.js';
import { ServerFaultRunner } from './server-fault-runner.js';

/** Where damage is done: the harness decides what and when, these know how. */
export interface FaultActions {
  /** Deletes or corrupts the committed data object of `partitionId`; resolves with what was done. */
  damagePartition?(request: DamagePartitionRequest): Promise<string>;
  /** Restarts the metadata store (Redis) while the job runs; resolves with what was done. */
  restartMetadataStore?(): Promise<string>;
  /** The shuffle-server pool's processes (`--shuffle-servers`): for kill-shuffle-server and pause-shuffle-server. */
  shuffleServers?: ShuffleServerFaultActions;
  /** kill-job-master: how the job master dies; default SIGKILL of this process. */
  killJobMaster?(): void;
}

/** A shuffle server's process, as its registry record names it. */
export interface ServerProcessRef {
  readonly serverId: string;
  readonly pid: number;
}

/** How server faults are done: the harness decides which server and when. */
export interface ShuffleServerFaultActions {
  /** Arms the server's own fault point for the partition (it kills or stops itself there). */
  arm(request: { serverId: string; point: 'push' | 'commit' | 'fetch'; jobId: string; partitionId: string; action: 'kill' | 'stop' }): Promise<ServerProcessRef>;
  /** The live server's process; throws when it is not registered, or not on this machine. */
  locate(serverId: string): Promise<ServerProcessRef>;
  /** Sends a signal to a process (throws when it is gone). */
  signal(pid: number, signal: NodeJS.Signals): void;
  /** The server holding the committed partition, per the commit index. */
  holder(jobId: string, partitionId: string): Promise<string | undefined>;
  /** Resolves true once the process is `state` (gone: exited or a zombie), false when `abort` fires first. */
  watch(pid: number, state: 'gone' | 'stopped', abort: AbortSignal, intervalMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface DamagePartitionRequest {
  readonly jobId: string;
  readonly partitionId: string;
  readonly mode: 'delete' | 'corrupt';
  /** The harness's seeded generator: the byte to flip is drawn from it. */
  readonly random: SeededRandom;
}

/** One fault of a run, its targets resolved (drawn from the seed where the spec left them open). */
export interface PlannedFault {
  readonly kind: FaultKind;
  /** The execution vertex or result partition hit (none for restart-redis). */
  readonly target?: string;
  /** The record (throw, kill-worker), the checkpoint (the checkpoint kill-worker kinds) or the deployment (restart-redis) it fires at. */
  readonly at?: number;
  /** Server faults: the point in the target partition's life. */
  readonly point?: ServerFaultPoint;
  /** pause-shuffle-server: how long the server stays stopped. */
  readonly pauseMs?: number;
  /** Whether it fired (a task fault: planted in the task's first attempt). */
  fired: boolean;
  /** What was done, once it fired (e.g. the object deleted, the byte flipped). */
  detail?: string;
}

/** Built-in default of a random record index: [0, 1000). */
const RANDOM_RECORD_LIMIT = 1000;
/** Built-in default of a random checkpoint id: [1, 4). */
const RANDOM_CHECKPOINT_LIMIT = 4;

/**
 * A seeded fault-injection harness (`weft run --inject-faults`, and the fault tests): from a FaultSpec
 * and the job's topology it resolves what to hit — the same seed always picks the same tasks, records,
 * partitions and moments — and damages the job through the engine's FaultInjector hooks:
 *
 * - `throw` / `kill-worker`: a TaskFault planted in the first attempt of the target task that is deployed
 *   (an attempt reset before it ever ran does not count);
 * - `kill-worker-after-pre-commit` / `kill-worker-before-commit`: the same, fired at a moment of
 *   checkpoint `at` (TaskFault.atCheckpoint: `pre-committed`, `completed`) instead of at a record;
 * - `delete-partition` / `corrupt-partition`: before the first region reading the target partition from
 *   another region is deployed, `actions.damagePartition` (the partition is then committed);
 * - `restart-redis`: before region deployment `at`, `actions.restartMetadataStore`;
 * - `kill-job-master`: through the event log (`wrapEventLog`), once the log durably holds `at` events of
 *   type `target`, `actions.killJobMaster` (SIGKILL of this process).
 *
 * One harness serves one job run; `faults` records what was planned and what fired.
 */
export class FaultHarness {
  readonly spec: FaultSpec;
  readonly seed: number;
  readonly faults: PlannedFault[] = [];
  readonly #actions: FaultActions;
  /** Partition damage under way or done, by fault. */
  readonly #damage = new Map<PlannedFault, Promise<void>>();
  /** Server faults at points that need the partition placed (push, commit): armed yet. */
  readonly #armed = new Set<PlannedFault>();
  /** The server each partition was last placed on (seen through the wrapped ShuffleMaster). */
  readonly #placements = new Map<string, string>();
  readonly #servers: ServerFaultRunner | undefined;
  #jobId: string | undefined;
  #used = false;
  #closed: Promise<void> | undefined;

  constructor(spec: FaultSpec, actions: FaultActions = {}) {
    this.spec = spec;
    this.seed = spec.seed ?? randomInt(0, 2 ** 31);
    this.#actions = actions;
    this.#servers = actions.shuffleServers === undefined ? undefined : new ServerFaultRunner(actions.shuffleServers);
  }

  /**
   * The job's blocking shuffle, wrapped so the harness learns where each partition is placed (its
   * ShuffleMaster's registerPartitionWithProducer names the server in `details.serverId`) and can arm a
   * push or commit fault on that server before the producer gets the descriptor. Everything else is the
   * factory's own.
   */
  wrapShuffle(factory: ShuffleServiceFactory): ShuffleServiceFactory {
    if (this.#servers === undefined) return factory;
    const harness = this;
    return {
      ...factory,
      createShuffleMaster(context) {
        const master = factory.createShuffleMaster(context);
        return new Proxy(master, {
          get(target, property) {
            if (property === 'registerPartitionWithProducer') {
              return async (request: Parameters<ShuffleMaster['registerPartitionWithProducer']>[0]) => {
                const descriptor = await target.registerPartitionWithProducer(request);
                await harness.#onRegistered(descriptor);
                return descriptor;
              };
            }
            const value: unknown = Reflect.get(target, property, target);
            return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
          },
        });
      },
    };
  }

  /** Continues any server it stopped and releases what the harness holds. Idempotent; call after the run. */
  close(): Promise<void> {
    this.#closed ??= this.#servers?.close() ?? Promise.resolve();
    return this.#closed;
  }

  /**
   * The job's event log, watched for the kill-job-master fault (when the spec has one): the append that
   * brings the job's count of the target's events to `at` kills the job master once it is durable.
   */
  wrapEventLog(eventLog: JobEventLog): JobEventLog {
    const request = this.spec.faults.find((f) => f.kind === 'kill-job-master');
    if (request === undefined) return eventLog;
    const killPoint = (): JobMasterKillPoint | undefined => {
      const planned = this.faults.find((f) => f.kind === 'kill-job-master');
      if (planned !== undefined) return { type: planned.target as string, at: planned.at as number };
      // not planned yet (the job is not known): only a fully given point applies
      return request.at === undefined ? undefined : { type: request.target ?? 'task-finished', at: request.at };
    };
    const kill = this.#actions.killJobMaster ?? (() => process.kill(process.pid, 'SIGKILL'));
    return killingEventLog(eventLog, killPoint, kill);
  }

  /** The spec with its seed, to replay this run. */
  get replaySpec(): string {
    return formatFaultSpec({ ...this.spec, seed: this.seed });
  }

  /** For `runJob({ faults })`. Throws (`WEFT_ERR_*`, naming `--inject-faults`) when a fault cannot apply to the job. */
  readonly factory: FaultInjectorFactory = (context) => this.#createInjector(context);

  #createInjector(context: FaultInjectorContext): FaultInjector {
    if (this.#used) throw new EngineError('WEFT_ERR_ILLEGAL_STATE', 'a fault harness serves one job run; make a new one');
    this.#used = true;
    const random = new SeededRandom(this.seed);
    const topology = ExecutionTopology.from(context.topology);
    const candidates = damageablePartitions(topology);
    for (const request of this.spec.faults) {
      switch (request.kind) {
        case 'throw':
        case 'kill-worker': {
          if (request.kind === 'kill-worker' && context.executor === 'inprocess') throw faultNotApplicable('kill-worker needs worker processes (--executor workers, or a cluster\'s task executors)');
          const target = request.target ?? topology.executionVertexId(random.int(0, topology.executionVertexCount));
          topology.requireExecutionVertex(target, '--inject-faults');
          this.faults.push({ kind: request.kind, target, at: request.at ?? random.int(0, RANDOM_RECORD_LIMIT), fired: false });
          break;
        }
        case 'kill-worker-after-pre-commit':
        case 'kill-worker-before-commit': {
          if (context.executor === 'inprocess') throw faultNotApplicable(`${request.kind} needs worker processes (--executor workers, or a cluster's task executors)`);
          const target = request.target ?? topology.executionVertexId(random.int(0, topology.executionVertexCount));
          topology.requireExecutionVertex(target, '--inject-faults');
          this.faults.push({ kind: request.kind, target, at: request.at ?? random.int(1, RANDOM_CHECKPOINT_LIMIT), fired: false });
          break;
        }
        case 'delete-partition':
        case 'corrupt-partition': {
          if (this.#actions.damagePartition === undefined) throw faultNotApplicable(`${request.kind} needs the persisted blocking shuffle`);
          if (request.target !== undefined) {
            topology.requireResultPartition(request.target, '--inject-faults');
            if (!candidates.includes(request.target)) throw faultNotApplicable(`${request.kind}: ${request.target} is not a blocking partition that another region reads, so no consumer would notice`);
          }
          if (request.target === undefined && candidates.length === 0) throw faultNotApplicable(`${request.kind}: the job has no blocking partition read by another region`);
          const target = request.target ?? random.pick(candidates);
          this.faults.push({ kind: request.kind, target, fired: false });
          break;
        }
        case 'kill-shuffle-server':
        case 'pause-shuffle-server': {
          if (this.#servers === undefined) throw faultNotApplicable(`${request.kind} needs a shuffle-server pool (--shuffle-servers redis://…)`);
          if (request.target !== undefined) {
            topology.requireResultPartition(request.target, '--inject-faults');
            if (!candidates.includes(request.target)) throw faultNotApplicable(`${request.kind}: ${request.target} is not a blocking partition that another region reads`);
          }
          if (request.target === undefined && candidates.length === 0) throw faultNotApplicable(`${request.kind}: the job has no blocking partition read by another region`);
          const target = request.target ?? random.pick(candidates);
          const point = request.point ?? random.pick(SERVER_FAULT_POINTS);
          this.faults.push({ kind: request.kind, target, point, ...(request.kind === 'pause-shuffle-server' ? { pauseMs: request.pauseMs ?? DEFAULT_PAUSE_MS } : {}), fired: false });
          break;
        }
        case 'kill-job-master': {
          const target = request.target ?? 'task-finished';
          const perTask = target === 'task-finished' || target === 'task-deployed';
          const at = request.at ?? (perTask ? random.int(1, topology.executionVertexCount + 1) : 1);
          this.faults.push({ kind: 'kill-job-master', target, at, fired: false });
          break;
        }
        case 'restart-redis': {
          if (this.#actions.restartMetadataStore === undefined) throw faultNotApplicable('restart-redis needs Redis metadata on one server (--meta redis://…; not redis+sentinel://)');
          const regions = context.regions.length;
          this.faults.push({ kind: 'restart-redis', at: request.at ?? (regions < 2 ? 1 : random.int(2, regions + 1)), fired: false });
          break;
        }
      }
    }
    const jobId = context.jobId;
    this.#jobId = jobId;
    return {
      taskFault: (task) => this.#taskFault(task),
      beforeDeploy: (region) => this.#beforeDeploy(jobId, region, random),
    };
  }

  #taskFault(task: TaskAttemptRef): TaskFault | undefined {
    const fault = this.faults.find((f) => (f.kind === 'throw' || f.kind === 'kill-worker' || isCheckpointFaultKind(f.kind)) && f.target === task.executionVertexId && !f.fired);
    if (fault === undefined) return undefined;
    fault.fired = true;
    if (isCheckpointFaultKind(fault.kind)) {
      const moment = fault.kind === 'kill-worker-after-pre-commit' ? 'pre-committed' : 'completed';
      fault.detail = `kills its worker when checkpoint ${fault.at} is ${moment}`;
      return { kind: 'kill-process', atRecord: 0, atCheckpoint: { checkpointId: fault.at as number, moment } };
    }
    fault.detail = `${fault.kind === 'throw' ? 'throws' : 'kills its worker'} at record ${fault.at}`;
    return { kind: fault.kind === 'throw' ? 'throw' : 'kill-process', atRecord: fault.at as number };
  }

  async #beforeDeploy(jobId: string, region: RegionDeploymentRef, random: SeededRandom): Promise<void> {
    for (const fault of this.faults) {
      if ((fault.kind === 'delete-partition' || fault.kind === 'corrupt-partition') && region.inputPartitions.includes(fault.target as string)) {
        // Every region reading the partition waits until it is damaged: consumers deployed at the same
        // time must not read it before.
        let damage = this.#damage.get(fault);
        if (damage === undefined) {
          fault.fired = true;
          const mode = fault.kind === 'delete-partition' ? 'delete' : 'corrupt';
          damage = (this.#actions.damagePartition as NonNullable<FaultActions['damagePartition']>)({ jobId, partitionId: fault.target as string, mode, random }).then((detail) => {
            fault.detail = detail;
          });
          this.#damage.set(fault, damage);
        }
        await damage;
      } else if (isServerFaultKind(fault.kind) && (fault.point === 'committed' || fault.point === 'fetch') && region.inputPartitions.includes(fault.target as string)) {
        // as for damage: every consumer deployed meanwhile waits until the fault is in place
        let done = this.#damage.get(fault);
        if (done === undefined) {
          done = this.#serverFaultBeforeConsumer(jobId, fault);
          this.#damage.set(fault, done);
        }
        await done;
      } else if (fault.kind === 'restart-redis' && !fault.fired && region.deployment === fault.at) {
        fault.fired = true;
        fault.detail = await (this.#actions.restartMetadataStore as NonNullable<FaultActions['restartMetadataStore']>)();
      }
    }
  }

  /** A partition was placed: arms the push or commit faults aimed at it (its first placement only). */
  async #onRegistered(descriptor: ShuffleDescriptor): Promise<void> {
    const partitionId = descriptor.partition.partitionId;
    const serverId = serverIdOf(descriptor);
    if (serverId === undefined || descriptor.jobId !== this.#jobId) return;
    this.#placements.set(partitionId, serverId);
    for (const fault of this.faults) {
      if (!isServerFaultKind(fault.kind) || fault.target !== partitionId || (fault.point !== 'push' && fault.point !== 'commit') || this.#armed.has(fault)) continue;
      this.#armed.add(fault);
      await (this.#servers as ServerFaultRunner).armPoint(fault, { jobId: descriptor.jobId, partitionId, serverId, point: fault.point });
    }
  }

  /** committed: kill or stop the holder now; fetch: arm its fetch point. */
  async #serverFaultBeforeConsumer(jobId: string, fault: PlannedFault): Promise<void> {
    const partitionId = fault.target as string;
    const actions = this.#actions.shuffleServers as ShuffleServerFaultActions;
    const serverId = (await actions.holder(jobId, partitionId)) ?? this.#placements.get(partitionId);
    if (serverId === undefined) {
      fault.detail = `no server holds ${partitionId}: nothing done`;
      return;
    }
    const runner = this.#servers as ServerFaultRunner;
    if (fault.point === 'fetch') await runner.armPoint(fault, { jobId, partitionId, serverId, point: 'fetch' });
    else await runner.signalNow(fault, { partitionId, serverId });
  }
}

function serverIdOf(descriptor: ShuffleDescriptor): string | undefined {
  const details = descriptor.details as { serverId?: unknown } | null;
  return typeof details === 'object' && details !== null && typeof details.serverId === 'string' ? details.serverId : undefined;
}

function faultNotApplicable(problem: string): EngineError {
  return new EngineError('WEFT_ERR_INVALID_ARGUMENT', `invalid --inject-faults: ${problem}`, { context: { field: '--inject-faults' } });
}

/** Blocking partitions that some task of another region reads: the ones whose loss a consumer can notice. */
export function damageablePartitions(topology: ExecutionTopology): string[] {
  const regions = buildPipelinedRegions(topology);
  const out: string[] = [];
  for (const edge of topology.edges) {
    if (edge.mustBePipelined) continue;
    for (let k = 0; k < edge.source.parallelism; k++) {
      const producerRegion = regions.regionOf[edge.source.firstExecutionVertex + k];
      const consumers = topology.consumersOf(edge, k);
      for (let j = consumers.start; j < consumers.end; j++) {
        if (regions.regionOf[edge.target.firstExecutionVertex + j] !== producerRegion) {
          out.push(`${edge.id}#${k}`);
          break;
        }
      }
    }
  }
  return out;
}
