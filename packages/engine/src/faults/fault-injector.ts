import type { JobTopology } from '../topology/job-topology.js';

/** What a planted task fault does when it fires. */
export type TaskFaultKind = 'throw' | 'kill-process';

/**
 * Where in a checkpoint's life a checkpoint fault fires, in the task it is planted in:
 * `pre-committed` — the task's operators made their snapshot durable (a two-phase-commit sink
 * pre-committed its transaction), before the task acknowledges the checkpoint: it never completes;
 * `completed` — the job master's word that the checkpoint completed reached the task, before any of its
 * operators hears of it (a sink's commit of it is left to the restore).
 */
export type CheckpointFaultMoment = 'pre-committed' | 'completed';

/**
 * A fault planted in one task attempt (shipped in its TaskDeployment, so it also reaches worker
 * processes). Without `atCheckpoint` it fires when the task reaches record `atRecord` (0-based, counting
 * the records the task reads from its inputs, or emits when it is a source), or right after its last
 * record when it has fewer; with `atCheckpoint` it fires at that moment of checkpoint
 * `atCheckpoint.checkpointId` instead (`atRecord` is ignored) — or of the first later one to reach it in
 * the task, when that one was aborted first — and not at all when the task takes no such checkpoint:
 *
 * - `throw`: the task fails with `WEFT_ERR_INJECTED_FAULT` (a task failure like any other);
 * - `kill-process`: the process running the task is killed with SIGKILL — the task executor dies with
 *   every task it runs. Only worker processes honour it; in the job master's process it throws instead.
 */
export interface TaskFault {
  readonly kind: TaskFaultKind;
  readonly atRecord: number;
  readonly atCheckpoint?: { readonly checkpointId: number; readonly moment: CheckpointFaultMoment };
}

/** A task attempt about to be deployed. */
export interface TaskAttemptRef {
  /** `"<vertexId>#<subtask>"`. */
  readonly executionVertexId: string;
  /** 0 for the first attempt, +1 for each restart. */
  readonly attempt: number;
}

/** A region about to be deployed, as a fault injector sees it. */
export interface RegionDeploymentRef {
  /** Deployments so far in this job, this one included (1 for the first region deployed). */
  readonly deployment: number;
  readonly region: number;
  readonly taskExecutorId: string;
  readonly tasks: readonly TaskAttemptRef[];
  /** The blocking partitions its tasks read that other regions produced (all finished and committed by now). */
  readonly inputPartitions: readonly string[];
}

/**
 * Hooks through which a fault-injection harness damages a running job on purpose (docs/DESIGN.md's faults:
 * a task throws, a worker dies, a committed partition disappears or is corrupted, a store restarts).
 * The engine calls them; what to damage, and how to reach the damaged thing, is the harness's — so the
 * engine keeps depending on the shuffle API only.
 *
 * Not in the contract: randomness (the harness seeds its own), and recording what was injected.
 */
export interface FaultInjector {
  /** A fault to plant in this task attempt's deployment, if any. Called once per attempt deployed. */
  taskFault?(task: TaskAttemptRef): TaskFault | undefined;
  /**
   * Awaited before a region's tasks are handed to their executor (after its partitions are registered):
   * the place to delete or corrupt a partition the region is about to read, or to restart a store
   * mid-job. A rejection is logged and the deployment goes on.
   */
  beforeDeploy?(region: RegionDeploymentRef): Promise<void> | void;
}

/** What a fault injector is built from, once the job is planned. */
export interface FaultInjectorContext {
  readonly jobId: string;
  /** The job's topology (docs/DESIGN.md contract 1). */
  readonly topology: JobTopology;
  /** Its pipelined regions, as `computePipelinedRegions` returns them. */
  readonly regions: readonly (readonly string[])[];
  readonly executor: string;
}

/** Builds the injector of one job run (runJob calls it once the job is planned). */
export type FaultInjectorFactory = (context: FaultInjectorContext) => FaultInjector;
