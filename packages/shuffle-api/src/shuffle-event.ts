import { type JsonValue, validateJsonValue } from './json.js';
import { ShuffleError, invalidArgument } from './shuffle-error.js';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * In-band events, delivered to each consumer channel in order with the records around them.
 *
 * - `end-of-partition`: the producer finished; the last item of every channel. Sent by `finish()` only.
 * - `end-of-data`: the producer will emit no more records (Flink's EndOfData), sent by the user.
 * - `checkpoint-barrier`: an aligned checkpoint marker with its id and timestamp.
 * - `user`: an application event with a name and a JSON payload.
 * - `channel-unavailable`: sent by the shuffle, not by a producer, on one channel of a PIPELINED_APPROXIMATE
 *   input whose producer attempt went away before its end (failed, or replaced by a new attempt). The gate
 *   dropped the partial record it held for that channel (`partialRecordBytes` of it, 0 when none) and keeps
 *   reading the others; the channel's records resume, from a whole record, once a new producer attempt is
 *   there (FLIP-135's downstream side).
 * - `channel-resumed`: sent by the shuffle, not by a producer, first on a PIPELINED_APPROXIMATE
 *   subpartition that a new reader attached to after its last one went away: `recordPosition` is how many
 *   records the subpartition was written before the first one this reader gets (its index, counted from 0
 *   over the producer attempt's whole subpartition; what went to the readers before, dropped or not). A
 *   consumer that knows how far its restored state had read that subpartition knows, exactly, how many
 *   records its state will never see.
 */
export type ShuffleEvent =
  | { readonly type: 'end-of-partition' }
  | { readonly type: 'end-of-data' }
  | { readonly type: 'checkpoint-barrier'; readonly id: number; readonly timestampMs: number }
  | { readonly type: 'user'; readonly name: string; readonly payload: JsonValue }
  | { readonly type: 'channel-unavailable'; readonly partialRecordBytes: number }
  | { readonly type: 'channel-resumed'; readonly recordPosition: number };

export const END_OF_PARTITION: ShuffleEvent = Object.freeze({ type: 'end-of-partition' });
export const END_OF_DATA: ShuffleEvent = Object.freeze({ type: 'end-of-data' });

const KIND_END_OF_PARTITION = 1;
const KIND_END_OF_DATA = 2;
const KIND_CHECKPOINT_BARRIER = 3;
const KIND_USER = 4;
const KIND_CHANNEL_UNAVAILABLE = 5;
const KIND_CHANNEL_RESUMED = 6;

/**
 * Checks an event a user asked to broadcast; throws SHF_ERR_INVALID_ARGUMENT naming the field. A user
 * event's payload must survive JSON unchanged (`validateJsonValue`): no undefined, BigInt, functions,
 * cycles, NaN or class instances (field `event.payload`).
 */
export function validateUserEvent(event: unknown): ShuffleEvent {
  if (typeof event !== 'object' || event === null) throw invalidArgument('event', 'expected an object');
  const e = event as Record<string, unknown>;
  switch (e['type']) {
    case 'end-of-partition':
      throw invalidArgument('event.type', 'end-of-partition is sent by finish(), not broadcast by hand');
    case 'channel-unavailable':
      throw invalidArgument('event.type', 'channel-unavailable is sent by the shuffle when a producer goes away, not broadcast by hand');
    case 'channel-resumed':
      throw invalidArgument('event.type', 'channel-resumed is sent by the shuffle when a new reader attaches, not broadcast by hand');
    case 'end-of-data':
      return event as ShuffleEvent;
    case 'checkpoint-barrier':
      if (!Number.isSafeInteger(e['id']) || (e['id'] as number) < 0) {
        throw invalidArgument('event.id', 'expected a non-negative integer');
      }
      if (typeof e['timestampMs'] !== 'number' || !Number.isFinite(e['timestampMs'])) {
        throw invalidArgument('event.timestampMs', 'expected a finite number');
      }
      return event as ShuffleEvent;
    case 'user':
      if (typeof e['name'] !== 'string' || e['name'].length === 0) {
        throw invalidArgument('event.name', 'expected a non-empty string');
      }
      if (!('payload' in e)) throw invalidArgument('event.payload', 'missing');
      // The payload is encoded as JSON (FRAMING.md): refuse what JSON would drop, change or choke on.
      validateJsonValue('event.payload', e['payload']);
      return event as ShuffleEvent;
    default:
      throw invalidArgument('event.type', `unknown event type ${JSON.stringify(e['type'])}`);
  }
}

/**
 * Encodes an event as the payload of an EVENT buffer (FRAMING.md, "Event buffers"):
 * byte 0 is the kind; a barrier adds its id and timestamp as float64 LE; a user event adds UTF-8 JSON
 * `{"name":..., "payload":...}`; channel-unavailable adds its partialRecordBytes, channel-resumed its
 * recordPosition, as float64 LE.
 */
export function encodeEvent(event: ShuffleEvent): Uint8Array {
  switch (event.type) {
    case 'end-of-partition':
      return Uint8Array.of(KIND_END_OF_PARTITION);
    case 'end-of-data':
      return Uint8Array.of(KIND_END_OF_DATA);
    case 'checkpoint-barrier': {
      const out = new Uint8Array(17);
      const view = new DataView(out.buffer);
      out[0] = KIND_CHECKPOINT_BARRIER;
      view.setFloat64(1, event.id, true);
      view.setFloat64(9, event.timestampMs, true);
      return out;
    }
    case 'channel-unavailable': {
      const out = new Uint8Array(9);
      out[0] = KIND_CHANNEL_UNAVAILABLE;
      new DataView(out.buffer).setFloat64(1, event.partialRecordBytes, true);
      return out;
    }
    case 'channel-resumed': {
      const out = new Uint8Array(9);
      out[0] = KIND_CHANNEL_RESUMED;
      new DataView(out.buffer).setFloat64(1, event.recordPosition, true);
      return out;
    }
    case 'user': {
      const json = new TextEncoder().encode(JSON.stringify({ name: event.name, payload: event.payload }));
      const out = new Uint8Array(1 + json.length);
      out[0] = KIND_USER;
      out.set(json, 1);
      return out;
    }
  }
}

/** Decodes `encodeEvent`'s bytes; throws SHF_ERR_DATA_CORRUPTED on anything else. */
export function decodeEvent(bytes: Uint8Array): ShuffleEvent {
  const corrupt = (why: string): ShuffleError =>
    new ShuffleError('SHF_ERR_DATA_CORRUPTED', `malformed event buffer: ${why}`);
  switch (bytes[0]) {
    case KIND_END_OF_PARTITION:
      return END_OF_PARTITION;
    case KIND_END_OF_DATA:
      return END_OF_DATA;
    case KIND_CHECKPOINT_BARRIER: {
      if (bytes.length !== 17) throw corrupt(`checkpoint barrier of ${bytes.length} bytes`);
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      return { type: 'checkpoint-barrier', id: view.getFloat64(1, true), timestampMs: view.getFloat64(9, true) };
    }
    case KIND_CHANNEL_UNAVAILABLE: {
      if (bytes.length !== 9) throw corrupt(`channel-unavailable of ${bytes.length} bytes`);
      return { type: 'channel-unavailable', partialRecordBytes: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getFloat64(1, true) };
    }
    case KIND_CHANNEL_RESUMED: {
      if (bytes.length !== 9) throw corrupt(`channel-resumed of ${bytes.length} bytes`);
      return { type: 'channel-resumed', recordPosition: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getFloat64(1, true) };
    }
    case KIND_USER: {
      let parsed: unknown;
      try {
        parsed = JSON.parse(UTF8.decode(bytes.subarray(1)));
      } catch (cause) {
        throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', 'malformed user event payload', { cause });
      }
      const p = parsed as { name?: unknown; payload?: JsonValue };
      if (typeof p.name !== 'string') throw corrupt('user event without a name');
      return { type: 'user', name: p.name, payload: p.payload ?? null };
    }
    default:
      throw corrupt(`unknown event kind ${String(bytes[0])}`);
  }
}
