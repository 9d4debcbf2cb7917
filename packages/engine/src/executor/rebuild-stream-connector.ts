import { EngineError } from '../errors/engine-error.js';
import type { StreamConnector, StreamConnectorReference } from '../io/stream-connector.js';
import { callProvider } from './call-provider.js';

/**
 * Rebuilds a stream connector (where `ctx.readRedisStream` sources read) in another process from its
 * reference, as worker processes and cluster task executors do with file systems; `WEFT_ERR_TASK_EXECUTOR_LOST`
 * when it cannot, as such an executor cannot run the job's stream sources.
 */
export async function rebuildStreamConnector(reference: StreamConnectorReference): Promise<StreamConnector> {
  const connector = (await callProvider(reference, 'the stream connector')) as Partial<StreamConnector> | undefined;
  if (!Array.isArray(connector?.schemes) || typeof connector?.open !== 'function') {
    throw new EngineError('WEFT_ERR_TASK_EXECUTOR_LOST', `${reference.module}'s ${reference.exportName} did not return a StreamConnector (schemes and open())`);
  }
  return connector as StreamConnector;
}
