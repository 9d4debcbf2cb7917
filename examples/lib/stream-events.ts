import { streamWord } from './stream-words.js';

/** Events are this far apart in event time, and arrive up to MAX_DELAY_MS out of order. */
export const EVENT_SPACING_MS = 2;
export const MAX_DELAY_MS = 400;

export interface StreamEvent {
  readonly key: string;
  /** Event time in ms (synthetic: a pure function of seq, not the wall clock). */
  readonly ts: number;
}

/** Event `seq` of the windowed examples: key and timestamp from the sequence number alone (checkable). */
export function streamEvent(seq: number): StreamEvent {
  const delay = (Math.imul(seq ^ (seq >>> 11), 0x85ebca6b) >>> 0) % MAX_DELAY_MS;
  return { key: streamWord(seq), ts: seq * EVENT_SPACING_MS + delay };
}
