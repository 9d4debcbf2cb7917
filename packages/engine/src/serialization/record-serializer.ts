/**
 * Turns the values flowing between operators into the bytes a shuffle carries, and back. Only bytes cross
 * a shuffle; the serializer is the engine's, not the shuffle's.
 *
 * Ownership: `serialize` returns a view into a buffer the serializer reuses — valid until the next call on
 * the same instance. Shuffle writers copy records on `emitRecord`, so the view is consumed at once.
 * `deserialize` reads a view that is valid only until the next gate read, so it must copy what it keeps
 * (decoding into JS values does).
 *
 * One instance per task and direction: instances are not shared between concurrent tasks.
 * Not in the contract: the byte format (each serializer defines its own; both sides use the same one).
 */
export interface RecordSerializer {
  /** A short name for errors and summaries, e.g. `"default"`, `"json"`. */
  readonly name: string;
  serialize(value: unknown): Uint8Array;
  deserialize(bytes: Uint8Array): unknown;
}

/** Creates one serializer instance per task (serializers keep scratch buffers). */
export type RecordSerializerFactory = () => RecordSerializer;
