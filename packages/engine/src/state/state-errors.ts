import { EngineError } from '../errors/engine-error.js';

/**
 * `WEFT_ERR_STATE_RESTORE`: a state snapshot cannot be restored — not a snapshot, written by a newer
 * format version, corrupted (its checksum does not match), taken with another max parallelism, or a set of
 * snapshots that leaves key groups uncovered or covers one twice. Nothing is restored.
 */
export function stateRestoreError(problem: string, context: Readonly<Record<string, string | number | boolean | undefined>> = {}): EngineError {
  return new EngineError('WEFT_ERR_STATE_RESTORE', `cannot restore state: ${problem}`, { context });
}
