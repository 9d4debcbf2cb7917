// Drives a barrier handler with a compact script of input events, as Flink's tests feed a mock input gate:
// `b3@1` the barrier of checkpoint 3 on channel 1, `c3@1` its cancellation marker, `e@1` channel 1's end
// of partition. Buffers are left out: handlers never see them. What the handler reports is logged in order:
// `T3` checkpoint 3 triggered, `A3:SUBSUMED` aborted with that reason.
import { type CheckpointBarrierHandler, type CheckpointBarrierMode, createCheckpointBarrierHandler } from '@weft/engine';

export interface ScriptedHandler {
  readonly handler: CheckpointBarrierHandler;
  /** Everything reported so far. */
  readonly log: string[];
  /** Alignment durations of the triggers, by checkpoint id. */
  readonly alignment: Map<number, number>;
  /** Feeds events, e.g. `feed('b1@0 b1@1 e@2')`. */
  feed(script: string): void;
  /** The blocked channels now. */
  blocked(): number[];
}

export function scripted(mode: CheckpointBarrierMode, channels: number, clock?: () => number): ScriptedHandler {
  const log: string[] = [];
  const alignment = new Map<number, number>();
  const handler = createCheckpointBarrierHandler({
    mode,
    channels,
    ...(clock === undefined ? {} : { clock }),
    onTrigger: (id, info) => {
      log.push(`T${id}`);
      alignment.set(id, info.alignmentDurationMs);
    },
    onAbort: (id, reason) => log.push(`A${id}:${reason}`),
  });
  return {
    handler,
    log,
    alignment,
    feed(script) {
      for (const token of script.trim().split(/\s+/)) {
        const match = /^([bce])(\d*)@(\d+)$/.exec(token);
        if (match === null) throw new Error(`bad script token ${token}`);
        const [, kind, id, channel] = match as unknown as [string, string, string, string];
        if (kind === 'b') handler.processBarrier(Number(id), Number(channel));
        else if (kind === 'c') handler.processCancellation(Number(id), Number(channel));
        else handler.processEndOfPartition(Number(channel));
      }
    },
    blocked: () => Array.from({ length: channels }, (_, c) => c).filter((c) => handler.isBlocked(c)),
  };
}
