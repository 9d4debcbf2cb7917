import type { JsonValue } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';

/** Where a provider lives: a module, its function export, and the JSON options it is called with. */
export interface ProviderReference {
  readonly module: string;
  readonly exportName: string;
  readonly options: JsonValue;
}

/**
 * Imports a provider's module and calls its export with the reference's options — how worker processes and
 * cluster task executors rebuild what the job master handed them by reference (file systems, stream
 * connectors). `WEFT_ERR_TASK_EXECUTOR_LOST` when it cannot: such an executor cannot run the job's tasks.
 * `what` names the thing in the error ("the file system module").
 */
export async function callProvider(reference: ProviderReference, what: string): Promise<unknown> {
  let module: Record<string, unknown>;
  try {
    module = (await import(reference.module)) as Record<string, unknown>;
  } catch (error) {
    throw new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `cannot import ${what} module ${reference.module}: ${(error as Error).message}`, { cause: error });
  }
  const provider = module[reference.exportName];
  if (typeof provider !== 'function') throw new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `${reference.module} has no function export ${reference.exportName}`);
  return (provider as (options: JsonValue) => unknown)(reference.options);
}
