import type { ExternalFileSystem, ExternalFileSystemReference } from '../io/external-file-system.js';
import { callProvider } from './call-provider.js';

/**
 * Rebuilds an external file system (job inputs and outputs beyond local paths) in another process from its
 * reference, as worker processes and cluster task executors do; `WEFT_ERR_TASK_EXECUTOR_LOST` when it
 * cannot, as such an executor cannot run the job's sources and sinks.
 */
export async function rebuildFileSystem(reference: ExternalFileSystemReference): Promise<ExternalFileSystem> {
  return (await callProvider(reference, 'the file system')) as ExternalFileSystem;
}
