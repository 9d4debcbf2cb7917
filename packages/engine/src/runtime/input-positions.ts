import type { InputChannelId } from './input-channels-of.js';
import type { OperatorStateSnapshot, TaskRestoreState } from './task-checkpointing.js';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The uid under which a task's snapshot keeps how far it had read each input channel (never an operator's:
 * operator uids are made of letters, digits, `_`, `.` and `-` only: logical-graph.ts).
 */
export const INPUT_POSITIONS_UID = '~input-positions';

/** A restored snapshot of InputPositions: by channel key (InputChannelId.key), the position and the producer attempt it counts (undefined: not known). */
export type RestoredPositions = ReadonlyMap<string, { readonly position: number; readonly producer: string | undefined }>;

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
 * asks its producers to resume (`resumeFrom`, their upstream backup) from a restored position where its own
 * deployment names that same producer attempt, and from 0 where it names a newer one than the snapshot
 * does (that attempt restored the same checkpoint: its records from 0 on are what the checkpoint did not
 * cover). Channels are matched by what they read (partition and subpartition), not by number. Loss counts
 * are exact while the channel's producer attempt is the one the restored checkpoint read or one restored
 * from it; where the snapshot does not know the producer attempt, the channel's loss is counted from 0.
 */
export class InputPositions {
  readonly #keys: readonly string[];
  readonly #positions: number[];
  /** Per channel, the producer attempt whose records `#positions` counts; undefined: not known. */
  readonly #producers: (string | undefined)[];
  readonly #restored: RestoredPositions | undefined;
  /** Channels whose producer attempt went away (`channel-unavailable`) that have not resumed since. */
  readonly #unavailable = new Set<number>();
  #lost = 0;

  /** `channels`: this attempt's input channels (inputChannelsOf), each with the producer attempt its deployment names. */
  constructor(channels: readonly InputChannelId[], restored?: RestoredPositions) {
    this.#keys = channels.map((c) => c.key);
    // a restored position counts only where it counts this deployment's producer attempt: a new attempt starts at 0
    this.#positions = channels.map(({ key, producer }) => {
      const r = restored?.get(key);
      return r !== undefined && r.producer === producer ? r.position : 0;
    });
    this.#producers = channels.map((c) => c.producer);
    this.#restored = restored;
  }

  /**
   * What a gate of `count` channels from channel `base` on asks its producers to resume from
   * (CreateInputGateRequest.resumeFrom): per channel the position this attempt's restored state read up
   * to, where it counts records of the producer attempt this attempt's deployment names; 0 where the
   * deployment names another (newer) attempt; none where either is not known; undefined when it restored
   * none (a first attempt, or no checkpoint).
   */
  resumeFrom(base: number, count: number): (number | undefined)[] | undefined {
    const restored = this.#restored;
    if (restored === undefined) return undefined;
    return Array.from({ length: count }, (_, i) => {
      const channel = base + i;
      const r = restored.get(this.#keys[channel] as string);
      const producer = this.#producers[channel];
      if (r === undefined || r.position < 0 || r.producer === undefined || producer === undefined) return undefined;
      // a producer attempt newer than the one the checkpoint read began at that checkpoint's state (it restored
      // from it: one newer than the checkpoint this attempt restores from would have been read by it): from 0
      return r.producer === producer ? r.position : 0;
    });
  }

  /**
   * The positions a restarted attempt (`attempt > 0`) starts from: its subtask's snapshot in `restore`,
   * when the checkpoint was taken at the same parallelism; else none (counted from 0). A snapshot of the
   * format before channels were named (positions only) restores none either.
   */
  static restoredFrom(restore: TaskRestoreState | undefined, subtask: number, parallelism: number, attempt: number): RestoredPositions | undefined {
    if (restore === undefined || attempt === 0) return undefined;
    const snapshots = restore.operators[INPUT_POSITIONS_UID]?.operator;
    if (snapshots === undefined || snapshots.length !== parallelism) return undefined;
    const bytes = snapshots[subtask];
    return bytes === undefined ? undefined : parseSnapshot(bytes);
  }

  /** Records this attempt's state will never see: the gaps `channel-resumed` showed. */
  get recordsLost(): number {
    return this.#lost;
  }

  /** `records` more records of `channel` were read. */
  read(channel: number, records: number): void {
    this.#positions[channel] = (this.#positions[channel] ?? 0) + records;
  }

  /**
   * `channel-resumed`: the channel's next record is record `recordPosition` of its subpartition. True when
   * the channel was unavailable (it reads a new producer attempt), false for its first reader.
   */
  resumed(channel: number, recordPosition: number): boolean {
    this.#lost += Math.max(0, recordPosition - (this.#positions[channel] ?? 0));
    this.#positions[channel] = recordPosition;
    return this.#unavailable.delete(channel);
  }

  /** `channel-unavailable`: the channel's producer attempt is gone; its next attempt (not known here) counts from 0. */
  unavailable(channel: number): void {
    this.#positions[channel] = 0;
    this.#producers[channel] = undefined;
    this.#unavailable.add(channel);
  }

  /**
   * The snapshot of a checkpoint: each channel's key, producer attempt and position less what
   * `held(channel)` records are still held unprocessed for it — JSON `{"channels":[[key, producer|null,
   * position], …]}` (a producer is null where it is not known, or where the held records reach back past
   * the position this attempt counted from).
   */
  snapshot(held: (channel: number) => number): OperatorStateSnapshot {
    const channels = this.#keys.map((key, i) => {
      const position = (this.#positions[i] as number) - held(i);
      return [key, position < 0 ? null : (this.#producers[i] ?? null), position];
    });
    return { operator: new TextEncoder().encode(JSON.stringify({ channels })) };
  }
}

/** A snapshot's channels by key; undefined for bytes that are not a snapshot of this format. */
function parseSnapshot(bytes: Uint8Array): RestoredPositions | undefined {
  if (bytes[0] !== 0x7b) return undefined; // '{': older snapshots were float64 positions only
  let parsed: unknown;
  try {
    parsed = JSON.parse(UTF8.decode(bytes));
  } catch {
    return undefined;
  }
  const channels = (parsed as { channels?: unknown } | null)?.channels;
  if (!Array.isArray(channels)) return undefined;
  const out = new Map<string, { position: number; producer: string | undefined }>();
  for (const c of channels as unknown[]) {
    if (!Array.isArray(c) || typeof c[0] !== 'string' || !(c[1] === null || typeof c[1] === 'string') || typeof c[2] !== 'number') return undefined;
    out.set(c[0], { position: c[2], producer: c[1] ?? undefined });
  }
  return out;
}
