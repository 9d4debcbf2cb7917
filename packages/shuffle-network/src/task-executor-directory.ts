import { invalidArgument, validateId, validateInteger } from '@weft/shuffle-api';
import { parseAddress } from './network-shuffle-options.js';

/** Where a task executor's network shuffle environment listens. Plain JSON. */
export interface TaskExecutorAddress {
  readonly taskExecutorId: string;
  readonly host: string;
  readonly port: number;
}

/**
 * Which task executor listens where: what a master needs to put a producer's address into the
 * descriptors it returns (Flink's TaskManagerLocation in its ProducerDescriptor). Filled from the
 * `taskExecutors` option, by environments of the same factory when they start, and by
 * `NetworkShuffleMaster.registerTaskExecutor` for environments in other processes.
 */
export class TaskExecutorDirectory {
  private readonly addresses = new Map<string, TaskExecutorAddress>();

  constructor(initial: Readonly<Record<string, string>> = {}) {
    for (const [taskExecutorId, address] of Object.entries(initial)) {
      this.set({ taskExecutorId, ...parseAddress(`taskExecutors.${taskExecutorId}`, address) });
    }
  }

  /** Records (or replaces) an address; SHF_ERR_INVALID_ARGUMENT naming the bad field. */
  set(address: TaskExecutorAddress): void {
    if (typeof address !== 'object' || address === null) throw invalidArgument('address', 'expected {taskExecutorId, host, port}');
    validateId('address.taskExecutorId', address.taskExecutorId);
    if (typeof address.host !== 'string' || address.host === '') throw invalidArgument('address.host', `expected a host, got ${JSON.stringify(address.host)}`);
    validateInteger('address.port', address.port, 1, 65_535);
    this.addresses.set(address.taskExecutorId, { taskExecutorId: address.taskExecutorId, host: address.host, port: address.port });
  }

  get(taskExecutorId: string): TaskExecutorAddress | undefined {
    return this.addresses.get(taskExecutorId);
  }
}
