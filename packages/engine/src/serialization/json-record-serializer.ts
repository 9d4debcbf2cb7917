import { EngineError } from '../errors/engine-error.js';
import type { RecordSerializer } from './record-serializer.js';

/**
 * Records as UTF-8 JSON (`JSON.stringify` + `TextEncoder`, `TextDecoder` + `JSON.parse`). JSON's own
 * rules apply: `undefined` in arrays becomes null, -0 becomes 0, Dates become strings. Slower than the
 * default serializer; useful for debugging (the bytes are readable) and as the baseline of its benchmark.
 */
export class JsonRecordSerializer implements RecordSerializer {
  readonly name = 'json';
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  serialize(value: unknown): Uint8Array {
    const text = JSON.stringify(value);
    if (text === undefined) throw new EngineError('WEFT_ERR_SERIALIZATION', `cannot serialize a ${typeof value} as JSON`);
    return this.encoder.encode(text);
  }

  deserialize(bytes: Uint8Array): unknown {
    try {
      return JSON.parse(this.decoder.decode(bytes)) as unknown;
    } catch (error) {
      throw new EngineError('WEFT_ERR_SERIALIZATION', `cannot decode a JSON record of ${bytes.length} bytes: ${(error as Error).message}`, { cause: error });
    }
  }
}

export function createJsonRecordSerializer(): RecordSerializer {
  return new JsonRecordSerializer();
}
