import type { InputDeployment } from './task-deployment.js';

/** A task's input channels numbered over all its gates: each input's first channel, and how many in all. */
export interface TaskInputChannels {
  readonly base: ReadonlyMap<InputDeployment, number>;
  readonly channels: number;
  /** Per channel, the producer attempt the deployment names (InputPartition.producerAttemptId). */
  readonly producers: readonly string[];
}

/**
 * Numbers a task's input channels gate after gate (an input's channels are its partitions times its
 * subpartitions), the numbering the barrier handler and the watermark valve share.
 */
export function inputChannelsOf(inputs: readonly InputDeployment[]): TaskInputChannels {
  const base = new Map<InputDeployment, number>();
  let channels = 0;
  const producers: string[] = [];
  for (const input of inputs) {
    base.set(input, channels);
    channels += input.partitions.length * (input.subpartitions.end - input.subpartitions.start + 1);
    for (const partition of input.partitions) {
      for (let s = input.subpartitions.start; s <= input.subpartitions.end; s++) producers.push(partition.producerAttemptId);
    }
  }
  return { base, channels, producers };
}
