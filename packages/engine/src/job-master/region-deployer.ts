import type { Logger } from '@weft/shuffle-api';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { FaultInjector } from '../faults/fault-injector.js';
import type { TaskExecutor } from '../executor/task-executor.js';
import type { RegionDeployment, TaskDeployment } from '../runtime/task-deployment.js';
import type { DeploymentBuilder } from './deployment-builder.js';
import type { RegionDependencies } from './region-dependencies.js';
import type { RegionPlacement } from './region-placement.js';

export interface RegionDeployerOptions {
  readonly topology: ExecutionTopology;
  readonly dependencies: RegionDependencies;
  readonly builder: DeploymentBuilder;
  readonly faults?: FaultInjector | undefined;
  readonly logger: Logger;
}

/** What preparing a deployment came to: deploy it, fail the region, or nothing (the region moved on meanwhile). */
export type PreparedDeployment =
  | { readonly kind: 'ready'; readonly deployment: RegionDeployment }
  | { readonly kind: 'failed'; readonly error: Error }
  | { readonly kind: 'stale' };

/**
 * The asynchronous part of deploying a region (Flink's ExecutionDeployer, before `submitTask`): builds
 * its deployment (registering its blocking partitions, and its pipelined ones when it is spread over executors) and runs the fault injector's `beforeDeploy`
 * hook. It changes no state: the scheduler makes the transitions around it, and `current()` tells it
 * whether the deployment is still wanted after each wait (a cancellation bumps the region's version).
 */
export class RegionDeployer {
  readonly #options: RegionDeployerOptions;
  #deployments = 0;

  constructor(options: RegionDeployerOptions) {
    this.#options = options;
  }

  async prepare(region: number, placement: RegionPlacement, current: () => boolean): Promise<PreparedDeployment> {
    let deployment: RegionDeployment;
    try {
      deployment = await this.#options.builder.build(region, placement);
    } catch (error) {
      return { kind: 'failed', error: error as Error };
    }
    if (!current()) return { kind: 'stale' };
    const { faults, topology, dependencies, logger } = this.#options;
    if (faults?.beforeDeploy === undefined) return { kind: 'ready', deployment };
    try {
      await faults.beforeDeploy({
        deployment: ++this.#deployments,
        region,
        taskExecutorId: (placement.slots[0] as RegionPlacement['slots'][number]).id,
        tasks: deployment.tasks.map((t) => ({ executionVertexId: t.executionVertexId, attempt: t.attempt })),
        inputPartitions: Array.from(dependencies.inputsOf[region] as Int32Array, (p) => topology.resultPartitionId(p)),
      });
    } catch (error) {
      logger.warn({ region, error: (error as Error).message }, 'the fault injector failed before a deployment');
    }
    return current() ? { kind: 'ready', deployment } : { kind: 'stale' };
  }
}

/** Hands each executor its share of a prepared region (tasks are in membersOf order, as executorOfMember): the whole deployment when one executor holds it all. */
export function handOut(deployment: RegionDeployment, placement: RegionPlacement): void {
  const shares = new Map<TaskExecutor, TaskDeployment[]>();
  deployment.tasks.forEach((task, i) => {
    const executor = placement.executorOfMember[i] as TaskExecutor;
    let share = shares.get(executor);
    if (share === undefined) shares.set(executor, (share = []));
    share.push(task);
  });
  for (const [executor, tasks] of shares) executor.deploy(shares.size === 1 ? deployment : { ...deployment, tasks });
}

/**
 * The approximate partitions a deployment's tasks produce, registered by the job master (executors that
 * serve each other): every live executor is told the new attempts — the gates of running consumers
 * reconnect to them (a restarted producer, maybe on another executor); told after the deployment, so the
 * producer's executor knows the attempt before a consumer asks for it.
 */
export function announceApproximate(deployment: RegionDeployment, live: Iterable<TaskExecutor>): void {
  const descriptors = deployment.tasks.flatMap((t) => t.outputs.filter((o) => o.approximate === true && o.descriptor !== undefined).map((o) => o.descriptor as NonNullable<typeof o.descriptor>));
  if (descriptors.length === 0) return;
  for (const executor of live) if (executor.shuffleLocation !== undefined) executor.updatePartitionInfo?.(descriptors);
}
