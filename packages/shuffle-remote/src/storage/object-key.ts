import { createHash } from 'node:crypto';
import { invalidArgument, validateId } from '@weft/shuffle-api';

/** Longest encoded id segment; longer ones keep a readable head and a hash (file names stop at 255 bytes). */
const MAX_SEGMENT = 160;
const SAFE = /^[A-Za-z0-9_-]$/;

/**
 * Encodes an id (already checked by `validateId`) as one key segment: every character outside
 * `[A-Za-z0-9_-]` becomes `%XX` of its UTF-8 bytes, so `.`, `#`, `@`, `:` and any separator are inert,
 * and no segment can be `.` or `..`. Deterministic.
 */
export function encodeKeySegment(field: string, id: unknown): string {
  const value = validateId(field, id);
  let out = '';
  for (const ch of value) {
    if (SAFE.test(ch)) out += ch;
    else for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (out.length > MAX_SEGMENT) {
    out = `${out.slice(0, 100).replace(/%[0-9A-F]?$/, '')}~${createHash('sha256').update(value).digest('hex').slice(0, 40)}`;
  }
  return out;
}

export interface ObjectKeyRequest {
  readonly jobId: string;
  readonly partitionId: string;
  readonly producerId: string;
  /** Makes each writer's object distinct, even for a re-created writer of the same attempt. */
  readonly writeId: string;
}

/** The data object of one (partition, attempt): `<job>/<partition>/<producer attempt>.<writeId>.wsm`. */
export function objectKey(request: ObjectKeyRequest): string {
  const job = encodeKeySegment('jobId', request.jobId);
  const partition = encodeKeySegment('partitionId', request.partitionId);
  const producer = encodeKeySegment('producerId', request.producerId);
  const writeId = encodeKeySegment('writeId', request.writeId);
  return `${job}/${partition}/${producer}.${writeId}.wsm`;
}

/** The key prefix of everything a job wrote: `<job>/`. */
export function jobKeyPrefix(jobId: string): string {
  return `${encodeKeySegment('jobId', jobId)}/`;
}

const KEY_SEGMENT = /^[A-Za-z0-9_%~.-]+$/;

/**
 * Refuses a key that could escape a store's root: empty, absolute, with empty, `.` or `..` segments, or
 * characters `objectKey` never produces. Stores call it on every key they are given.
 */
export function checkKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > 1024) throw invalidArgument('key', 'expected a non-empty key');
  for (const segment of key.split('/')) {
    if (segment === '' || segment === '.' || segment === '..' || !KEY_SEGMENT.test(segment)) {
      throw invalidArgument('key', `unsafe object key ${JSON.stringify(key)}`);
    }
  }
  return key;
}
