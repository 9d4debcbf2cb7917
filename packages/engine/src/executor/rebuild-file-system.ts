import { EngineError } from '../errors/engine-error.js';
import type { ExternalFileSystem, ExternalFileSystemProvider, ExternalFileSystemReference } from '../io/external-file-system.js';

/**
 * Rebuilds an external file system (job inputs and outputs beyond local paths) in another process from its
 * reference, as worker processes and cluster task executors do; `WEFT_ERR_TASK_EXECUTOR_LOST` when it
 * cannot, as such an executor cannot run the job's sources and sinks.
 */
export async function rebuildFileSystem(reference: ExternalFileSystemReference): Promise<ExternalFileSystem> {
  let module: Record<string, unknown>;
  try {
    module = (await import(reference.module)) as Record<string, unknown>;
  } catch (error) {
    throw new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `cannot import the file system module ${reference.module}: ${(error as Error).message}`, { cause: error });
  }
  const provider = module[reference.exportName];
  if (typeof provider !== 'function') throw new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `${reference.module} has no function export ${reference.exportName}`);
  return (provider as ExternalFileSystemProvider)(reference.options);
}
