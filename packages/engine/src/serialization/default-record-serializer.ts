import type { RecordSerializer } from './record-serializer.js';
import { RecordDecoder } from './record-decoder.js';
import { RecordEncoder } from './record-encoder.js';

/**
 * The default record serializer: a compact tagged binary form of JSON-like values — null, undefined,
 * booleans, numbers (int32 as zigzag varints, others as float64, -0 and NaN kept), strings (UTF-8),
 * arrays, plain objects (own enumerable string keys, in order) and Uint8Arrays. Anything else (functions,
 * symbols, bigints, Maps, Dates, class instances, cycles) fails with `WEFT_ERR_SERIALIZATION` naming what
 * it met; use a custom serializer for such values.
 *
 * Against the JSON serializer (`JSON.stringify` + `TextEncoder`, `TextDecoder` + `JSON.parse`) on the same
 * records, packages/engine/bench/record-serializer.bench.ts measures: encoding in 0.3-0.6 of the time
 * (tuples, plain objects, long strings), decoding strings in about 0.7, records no larger (a fifth
 * smaller for `["word", n]`) — but decoding plain objects 1.5-2× as slow as `JSON.parse`, whose object
 * fast path this format does not have, and short tuples about even (results:
 * packages/engine/bench/README.md). It writes no intermediate string, ASCII byte by byte, lengths folded
 * into tags (record-format.ts), and decodes strings from a cached Buffer view of the shuffle segment.
 * RecordEncoder writes the format, RecordDecoder reads it.
 */
export class DefaultRecordSerializer implements RecordSerializer {
  readonly name = 'default';
  private readonly encoder = new RecordEncoder();
  private readonly decoder = new RecordDecoder();

  serialize(value: unknown): Uint8Array {
    return this.encoder.encode(value);
  }

  deserialize(bytes: Uint8Array): unknown {
    return this.decoder.decode(bytes);
  }
}

/** The default serializer factory. */
export function createDefaultRecordSerializer(): RecordSerializer {
  return new DefaultRecordSerializer();
}
