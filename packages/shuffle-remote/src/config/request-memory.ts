import { invalidArgument } from '@weft/shuffle-api';

/** The smallest read a gate sized by its request's `memoryBytes` makes. */
export const MIN_REQUESTED_READ_BUFFER_BYTES = 4096;

/** Reads a gate's SubpartitionRangeReader may hold at once: the window, the read ahead and two kept free. */
export const READ_BUFFERS_PER_GATE = 4;

function checkMemoryBytes(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw invalidArgument('memoryBytes', `expected a positive whole number of bytes, got ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * A writer's `producerMemoryBytes`: the configured one, capped at the request's `memoryBytes` (the
 * producing task's share for it) when given. The writer's own floor (writerBudget) still applies.
 */
export function requestedProducerMemoryBytes(configured: number, memoryBytes: unknown): number {
  if (memoryBytes === undefined) return configured;
  return Math.min(configured, checkMemoryBytes(memoryBytes));
}

/**
 * A gate's `readBufferBytes`: the configured one, or, when the request gives `memoryBytes`, a
 * READ_BUFFERS_PER_GATE-th of it if smaller (never below MIN_REQUESTED_READ_BUFFER_BYTES).
 */
export function requestedReadBufferBytes(configured: number, memoryBytes: unknown): number {
  if (memoryBytes === undefined) return configured;
  const share = Math.floor(checkMemoryBytes(memoryBytes) / READ_BUFFERS_PER_GATE);
  return Math.min(configured, Math.max(MIN_REQUESTED_READ_BUFFER_BYTES, share));
}
