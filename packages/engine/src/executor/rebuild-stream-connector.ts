import { EngineError } from '../errors/engine-error.js';
import type { StreamConnector, StreamConnectorProvider, StreamConnectorReference } from '../io/stream-connector.js';

/**
 * Rebuilds a stream connector (where `ctx.readRedisStream` sources read) in another process from its
 * reference, as worker processes and cluster task executors do with file systems; `WEFT_ERR_TASK_EXECUTOR_LOST`
 * when it cannot, as such an executor cannot run the job's stream sources.
 */
export async function rebuildStreamConnector(reference: StreamConnectorReference): Promise<StreamConnector> {
  let module: Record<string, unknown>;
  try {
    module = (await import(reference.module)) as Record<string, unknown>;
  } catch (error) {
    throw new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `cannot import the stream connector module ${reference.module}: ${(error as Error).message}`, { cause: error });
  }
  const provider = module[reference.exportName];
  if (typeof provider !== 'function') throw new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `${reference.module} has no function export ${reference.exportName}`);
  const connector = (provider as StreamConnectorProvider)(reference.options);
  if (!Array.isArray(connector?.schemes) || typeof connector?.open !== 'function') {
    throw new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `${reference.module}'s ${reference.exportName} did not return a StreamConnector (schemes and open())`);
  }
  return connector;
}
