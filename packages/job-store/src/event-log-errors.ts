import { EngineError } from '@weft/engine';

/** WEFT_ERR_FENCED: `epoch` of `jobId` is no longer the newest (`newestEpoch`); nothing was written. */
export function fencedError(jobId: string, epoch: number, newestEpoch: number): EngineError {
  const why =
    newestEpoch > epoch
      ? `epoch ${newestEpoch} has opened the job since (another job master owns it)`
      : `the job's lease record is gone (newest epoch ${newestEpoch}: the run was deleted, or the store lost data)`;
  return new EngineError('WEFT_ERR_FENCED', `job ${jobId}: append by epoch ${epoch} refused, ${why}; nothing was written`, {
    context: { jobId, epoch, newestEpoch },
  });
}

/**
 * WEFT_ERR_FENCED of a conditional `open`/`deleteRun` (`ifEpoch`): the job's newest epoch is no longer
 * `expected` but `newestEpoch` — a run opened the id since; nothing was changed.
 */
export function epochMovedError(jobId: string, operation: 'open' | 'deleteRun', expected: number, newestEpoch: number): EngineError {
  return new EngineError('WEFT_ERR_FENCED', `job ${jobId}: ${operation} if epoch ${expected} refused, the newest epoch is ${newestEpoch} (a run opened the job since); nothing was changed`, {
    context: { jobId, epoch: expected, newestEpoch },
  });
}

/** WEFT_ERR_EVENT_LOG about `jobId` in the store `description`. */
export function eventLogError(request: { jobId?: string; description: string; problem: string; cause?: unknown; context?: Record<string, string | number> }): EngineError {
  const subject = request.jobId === undefined ? '' : `job ${request.jobId}: `;
  return new EngineError('WEFT_ERR_EVENT_LOG', `job event log ${request.description}: ${subject}${request.problem}`, {
    context: { ...(request.jobId === undefined ? {} : { jobId: request.jobId }), ...request.context },
    ...(request.cause === undefined ? {} : { cause: request.cause }),
  });
}
