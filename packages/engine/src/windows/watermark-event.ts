import type { ShuffleEvent } from '@weft/shuffle-api';

/**
 * The user event (FRAMING.md kind 4) a task broadcasts on its outputs to carry its watermark downstream,
 * in order with the records around it: payload `{"watermark": N}` (ms, finite), or `{"idle": true}` when
 * the sender holds nothing back until its next watermark. End of input needs no event: a channel's
 * end-of-partition is watermark +Infinity.
 */
export const WATERMARK_EVENT = 'weft.watermark';

export function watermarkEvent(watermark: number): ShuffleEvent {
  return { type: 'user', name: WATERMARK_EVENT, payload: { watermark } };
}

export const IDLE_EVENT: ShuffleEvent = Object.freeze({ type: 'user', name: WATERMARK_EVENT, payload: { idle: true } });

/** A watermark event's content: a watermark, `'idle'`, or undefined for any other event (or a malformed one). */
export function readWatermarkEvent(event: ShuffleEvent): number | 'idle' | undefined {
  if (event.type !== 'user' || event.name !== WATERMARK_EVENT) return undefined;
  const payload = event.payload as { watermark?: unknown; idle?: unknown } | null;
  if (typeof payload !== 'object' || payload === null) return undefined;
  if (payload.idle === true) return 'idle';
  return typeof payload.watermark === 'number' && Number.isFinite(payload.watermark) ? payload.watermark : undefined;
}
