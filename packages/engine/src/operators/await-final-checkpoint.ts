import type { OperatorContext } from './stream-operator.js';

/**
 * The watermark a source at its end sends before it waits (Flink's MAX_WATERMARK at end of data, FLIP-147):
 * it holds nothing back any more, so event-time windows downstream fire on the other sources' watermarks.
 * Finite, as watermark events are; later than any timestamp a job can assign a record.
 */
export const END_OF_DATA_WATERMARK = Number.MAX_SAFE_INTEGER;

/**
 * A source at its end, in a checkpointed job: sends END_OF_DATA_WATERMARK, then waits until the job's final
 * checkpoint completed (the one triggered once every source waits) or no checkpoint can be taken any more
 * (undefined), and rejects when the task is cancelled. Until then the source stays a running task, so the
 * job's checkpoints go on while other sources still have work (a finished task takes no checkpoint), and
 * its end of input follows the final checkpoint. Without checkpoints: at once.
 */
export async function awaitFinalCheckpoint(context: OperatorContext): Promise<number | undefined> {
  const { signal, awaitFinalCheckpoint: final } = context;
  if (final === undefined) return undefined;
  context.watermarks?.emitWatermark(END_OF_DATA_WATERMARK);
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  aborted.catch(() => {});
  return Promise.race([final(), aborted]);
}
