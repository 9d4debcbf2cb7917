import type { OperatorStateSnapshot, TaskRestoreState } from './task-checkpointing.js';

/**
 * The uid under which a task's snapshot keeps how far it had read each input channel (never an operator's:
 * operator uids are made of letters, digits, `_`, `.` and `-` only: logical-graph.ts).
 */
export const INPUT_POSITIONS_UID = '~input-positions';

/** A restored snapshot of InputPositions: per channel the position and the producer attempt it counts (undefined: not known). */
export interface RestoredPositions {
  readonly positions: readonly number[];
  readonly producers: readonly (string | undefined)[];
}

/**
 * How far a task attempt's state has read each of its input channels, counted in records from the start of
 * the producer attempt's subpartition — what makes the records an approximate recovery loses counted, not
 * estimated (issue 16, FLIP-135).
 *
 * A new reader of a PIPELINED_APPROXIMATE subpartition gets `channel-resumed` first: the position of the
 * first record it will get. Every record between the position this attempt's state covers (restored from
 * the checkpoint it started from, 0 when it started empty) and that one never reaches its state: what the
 * failed attempt read after the checkpoint, what died with it in flight, what upstream dropped while no
 * attempt was attached, the record it was served the tail of. `recordsLost` sums them.
 *
 * Snapshots keep each channel's position less the records an aligning barrier handler still holds for it
 * (they come after that channel's barrier, so not in the snapshot), and the producer attempt the position
 * counts records of: the deployment's, until the channel's producer went away (`channel-unavailable`: a
 * new attempt counts from 0 again, and which one this attempt does not know: none). A restarted attempt
 * asks its producers to resume from a restored position (`resumeFrom`, their upstream backup) only where
 * its own deployment names that same producer attempt. Loss counts are exact while the channel's producer
 * attempt is the one the restored checkpoint read; a restore from a checkpoint taken before a producer's
 * restart cannot tell (such a channel's loss is counted from 0, or not at all below it).
 */
export class InputPositions {
  readonly #positions: number[];
  /** Per channel, the producer attempt whose records `#positions` counts; undefined: not known. */
  readonly #producers: (string | undefined)[];
  readonly #restored: RestoredPositions | undefined;
  #lost = 0;

  /** `producers`: per channel, the producer attempt this attempt's deployment names (InputPartition.producerAttemptId). */
  constructor(producers: readonly string[], restored?: RestoredPositions) {
    // a restored position counts only where it counts this deployment's producer attempt: a new attempt starts at 0
    this.#positions = producers.map((producer, i) => (restored !== undefined && restored.producers[i] === producer ? (restored.positions[i] ?? 0) : 0));
    this.#producers = [...producers];
    this.#restored = restored;
  }

  /**
   * What a gate of `count` channels from channel `base` on asks its producers to resume from
   * (CreateInputGateRequest.resumeFrom): per channel the position this attempt's restored state read up
   * to, where it counts records of the producer attempt this attempt's deployment names (else none for
   * that channel); undefined when it restored none (a first attempt, or no checkpoint).
   */
  resumeFrom(base: number, count: number): (number | undefined)[] | undefined {
    const restored = this.#restored;
    if (restored === undefined) return undefined;
    return Array.from({ length: count }, (_, i) => {
      const channel = base + i;
      const position = restored.positions[channel];
      return position !== undefined && position >= 0 && restored.producers[channel] !== undefined && restored.producers[channel] === this.#producers[channel] ? position : undefined;
    });
  }

  /**
   * The positions a restarted attempt (`attempt > 0`) starts from: its subtask's snapshot in `restore`,
   * when the checkpoint was taken at the same parallelism with as many channels; else none (counted from 0).
   */
  static restoredFrom(restore: TaskRestoreState | undefined, subtask: number, parallelism: number, attempt: number, channels: number): RestoredPositions | undefined {
    if (restore === undefined || attempt === 0) return undefined;
    const snapshots = restore.operators[INPUT_POSITIONS_UID]?.operator;
    if (snapshots === undefined || snapshots.length !== parallelism) return undefined;
    const bytes = snapshots[subtask];
    if (bytes === undefined || bytes.byteLength < channels * 8) return undefined;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const positions = Array.from({ length: channels }, (_, i) => view.getFloat64(i * 8, true));
    // after the positions, the producer attempts they count: a JSON array of one entry per channel (absent in
    // snapshots before session 13: none known). A tail that is not such an array is a snapshot of another
    // channel count: nothing restored.
    if (bytes.byteLength === channels * 8) return { positions, producers: [] };
    const producers = parseProducers(bytes.subarray(channels * 8), channels);
    if (producers === undefined) return undefined;
    return { positions, producers };
  }

  /** Records this attempt's state will never see: the gaps `channel-resumed` showed. */
  get recordsLost(): number {
    return this.#lost;
  }

  /** `records` more records of `channel` were read. */
  read(channel: number, records: number): void {
    this.#positions[channel] = (this.#positions[channel] ?? 0) + records;
  }

  /** `channel-resumed`: the channel's next record is record `recordPosition` of its subpartition. */
  resumed(channel: number, recordPosition: number): void {
    this.#lost += Math.max(0, recordPosition - (this.#positions[channel] ?? 0));
    this.#positions[channel] = recordPosition;
  }

  /** `channel-unavailable`: the channel's producer attempt is gone; its next attempt (not known here) counts from 0. */
  unavailable(channel: number): void {
    this.#positions[channel] = 0;
    this.#producers[channel] = undefined;
  }

  /** The snapshot of a checkpoint: each channel's position less what `held(channel)` records are still held unprocessed for it. */
  snapshot(held: (channel: number) => number): OperatorStateSnapshot {
    const producers = new TextEncoder().encode(JSON.stringify(this.#producers.map((p, i) => (p === undefined || (this.#positions[i] as number) - held(i) < 0 ? null : p))));
    const bytes = new Uint8Array(this.#positions.length * 8 + producers.length);
    const view = new DataView(bytes.buffer);
    this.#positions.forEach((position, i) => view.setFloat64(i * 8, position - held(i), true));
    bytes.set(producers, this.#positions.length * 8);
    return { operator: bytes };
  }
}

/** The snapshot's tail: per channel the producer attempt (null: none known), or undefined if it is not a JSON array of `channels` entries. */
function parseProducers(tail: Uint8Array, channels: number): (string | undefined)[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(tail));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== channels || !parsed.every((p) => p === null || typeof p === 'string')) return undefined;
  return parsed.map((p: string | null) => p ?? undefined);
}
