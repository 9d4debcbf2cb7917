import type { OperatorStateSnapshot, TaskRestoreState } from './task-checkpointing.js';

/**
 * The uid under which a task's snapshot keeps how far it had read each input channel (never an operator's:
 * operator uids are made of letters, digits, `_`, `.` and `-` only: logical-graph.ts).
 */
export const INPUT_POSITIONS_UID = '~input-positions';

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
 * (they come after that channel's barrier, so not in the snapshot). Exact while the channel's producer
 * attempt is the one the restored checkpoint read: a restarted producer starts its subpartitions at 0
 * again (after `channel-unavailable` the channel counts from 0), and a restore from a checkpoint taken
 * before that restart cannot tell (such a channel's loss is counted from 0, or not at all below it).
 */
export class InputPositions {
  readonly #positions: number[];
  readonly #restored: readonly number[] | undefined;
  #lost = 0;

  constructor(channels: number, restored?: readonly number[]) {
    this.#positions = Array.from({ length: channels }, (_, i) => restored?.[i] ?? 0);
    this.#restored = restored;
  }

  /**
   * What a gate of `count` channels from channel `base` on asks its producers to resume from
   * (CreateInputGateRequest.resumeFrom): the positions this attempt's restored state read up to; undefined
   * when it restored none (a first attempt, or no checkpoint).
   */
  resumeFrom(base: number, count: number): number[] | undefined {
    return this.#restored?.slice(base, base + count);
  }

  /**
   * The positions a restarted attempt (`attempt > 0`) starts from: its subtask's snapshot in `restore`,
   * when the checkpoint was taken at the same parallelism with as many channels; else none (counted from 0).
   */
  static restoredFrom(restore: TaskRestoreState | undefined, subtask: number, parallelism: number, attempt: number, channels: number): readonly number[] | undefined {
    if (restore === undefined || attempt === 0) return undefined;
    const snapshots = restore.operators[INPUT_POSITIONS_UID]?.operator;
    if (snapshots === undefined || snapshots.length !== parallelism) return undefined;
    const bytes = snapshots[subtask];
    if (bytes === undefined || bytes.byteLength !== channels * 8) return undefined;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return Array.from({ length: channels }, (_, i) => view.getFloat64(i * 8, true));
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

  /** `channel-unavailable`: the channel's producer attempt is gone; its next attempt counts from 0. */
  unavailable(channel: number): void {
    this.#positions[channel] = 0;
  }

  /** The snapshot of a checkpoint: each channel's position less what `held(channel)` records are still held unprocessed for it. */
  snapshot(held: (channel: number) => number): OperatorStateSnapshot {
    const bytes = new Uint8Array(this.#positions.length * 8);
    const view = new DataView(bytes.buffer);
    this.#positions.forEach((position, i) => view.setFloat64(i * 8, position - held(i), true));
    return { operator: bytes };
  }
}
