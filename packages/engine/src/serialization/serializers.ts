import { invalidEngineArgument } from '../errors/engine-error.js';
import { createDefaultRecordSerializer } from './default-record-serializer.js';
import { createJsonRecordSerializer } from './json-record-serializer.js';
import type { RecordSerializerFactory } from './record-serializer.js';

/** The record serializers a job can name (by name, so worker processes pick the same one). */
export const SERIALIZERS = {
  default: createDefaultRecordSerializer,
  json: createJsonRecordSerializer,
} as const satisfies Record<string, RecordSerializerFactory>;

export type SerializerName = keyof typeof SERIALIZERS;

export function resolveSerializer(name: string): RecordSerializerFactory {
  if (!Object.hasOwn(SERIALIZERS, name)) throw invalidEngineArgument('serializer', `unknown serializer ${JSON.stringify(name)}; expected one of ${Object.keys(SERIALIZERS).join(', ')}`);
  return SERIALIZERS[name as SerializerName];
}
