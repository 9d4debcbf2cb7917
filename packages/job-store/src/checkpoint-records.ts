import type { CompletedCheckpoint } from '@weft/engine';
import { eventLogError } from './event-log-errors.js';

/** A completed checkpoint as stored (JSON), checked when read back: a record that does not parse is a corrupt store. */
export function decodeCheckpoint(raw: string, jobId: string, description: string): CompletedCheckpoint {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    value = undefined;
  }
  const c = value as Partial<CompletedCheckpoint> | undefined;
  if (c === undefined || c === null || !Number.isSafeInteger(c.checkpointId) || typeof c.triggeredAtMs !== 'number' || typeof c.completedAtMs !== 'number' || typeof c.tasks !== 'object' || c.tasks === null) {
    throw eventLogError({ jobId, description, problem: 'a completed checkpoint record does not parse: the store is corrupt' });
  }
  return c as CompletedCheckpoint;
}
