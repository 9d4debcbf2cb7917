import type { InputDeployment } from './task-deployment.js';

/** A task's input channels numbered over all its gates: each input's first channel, and how many in all. */
export interface TaskInputChannels {
  readonly base: ReadonlyMap<InputDeployment, number>;
  readonly channels: number;
  /** Per channel, which it is: its partition and subpartition, and the producer attempt the deployment names. */
  readonly ids: readonly InputChannelId[];
}

/** One input channel by what it reads, not by its number (a restarted attempt's deployment may leave out a finished producer's). */
export interface InputChannelId {
  /** `<partitionId>/<subpartition>`. */
  readonly key: string;
  /** InputPartition.producerAttemptId. */
  readonly producer: string;
}

/**
 * Numbers a task's input channels gate after gate (an input's channels are its partitions times its
 * subpartitions), the numbering the barrier handler and the watermark valve share.
 */
export function inputChannelsOf(inputs: readonly InputDeployment[]): TaskInputChannels {
  const base = new Map<InputDeployment, number>();
  let channels = 0;
  const ids: InputChannelId[] = [];
  for (const input of inputs) {
    base.set(input, channels);
    channels += channelCount(input);
    for (const partition of input.partitions) {
      for (let s = input.subpartitions.start; s <= input.subpartitions.end; s++) ids.push({ key: `${partition.partitionId}/${s}`, producer: partition.producerAttemptId });
    }
  }
  return { base, channels, ids };
}

/** An input's channels: its partitions times its subpartitions. */
export function channelCount(input: InputDeployment): number {
  return input.partitions.length * (input.subpartitions.end - input.subpartitions.start + 1);
}
