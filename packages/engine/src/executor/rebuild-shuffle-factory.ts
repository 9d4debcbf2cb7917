import type { JsonValue, ShuffleServiceFactory, ShuffleServiceReference } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';

/**
 * Rebuilds a shuffle service factory in another process from its reference (module specifier, export
 * name, JSON options), as worker processes and cluster task executors do. `field` (`pipelined`,
 * `blocking`) names it in errors: `WEFT_ERR_TASK_EXECUTOR_LOST`, as such an executor cannot run anything.
 */
export async function rebuildShuffleFactory(reference: ShuffleServiceReference, field: string): Promise<ShuffleServiceFactory> {
  let module: Record<string, unknown>;
  try {
    module = (await import(reference.module)) as Record<string, unknown>;
  } catch (error) {
    throw new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `worker cannot import the ${field} shuffle module ${reference.module}: ${(error as Error).message}`, { cause: error });
  }
  const provider = module[reference.exportName];
  if (typeof provider !== 'function') throw new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `${reference.module} has no function export ${reference.exportName}`);
  return (provider as (options: JsonValue) => ShuffleServiceFactory)(reference.options);
}
