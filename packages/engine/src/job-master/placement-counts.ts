import type { RegionPlacement } from './region-placement.js';

/** Where a job's tasks were deployed (JobResult.placement). Plain JSON. */
export interface PlacementSummary {
  /** Task attempts deployed to each task executor, by executor id. */
  readonly tasksPerExecutor: Readonly<Record<string, number>>;
  /** Region deployments whose tasks ran on more than one executor. */
  readonly spreadDeployments: number;
}

/** Counts, as regions deploy, which executor took how many tasks, and how many deployments were spread. */
export class PlacementCounts {
  readonly #tasks = new Map<string, number>();
  #spread = 0;

  deployed(placement: RegionPlacement): void {
    if (placement.spread) this.#spread++;
    for (const executor of placement.executorOfMember) this.#tasks.set(executor.id, (this.#tasks.get(executor.id) ?? 0) + 1);
  }

  summary(): PlacementSummary {
    return { tasksPerExecutor: Object.fromEntries([...this.#tasks].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))), spreadDeployments: this.#spread };
  }
}
