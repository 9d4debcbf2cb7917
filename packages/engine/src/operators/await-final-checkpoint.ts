import type { OperatorContext } from './stream-operator.js';

/**
 * A source at its end, in a checkpointed job: waits until the job's final checkpoint completed (the one
 * triggered once every source waits) or no checkpoint can be taken any more (undefined), and rejects when
 * the task is cancelled. Until then the source stays a running task, so the job's checkpoints go on while
 * other sources still have work (a finished task takes no checkpoint). Without checkpoints: at once.
 */
export async function awaitFinalCheckpoint(context: OperatorContext): Promise<number | undefined> {
  const { signal, awaitFinalCheckpoint: final } = context;
  if (final === undefined) return undefined;
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  aborted.catch(() => {});
  return Promise.race([final(), aborted]);
}
