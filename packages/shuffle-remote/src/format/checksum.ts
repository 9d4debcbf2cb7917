import { invalidConfig } from '@weft/shuffle-api';
import { crc32cJs } from './crc32c-js.js';
import { type Crc32cFunction, type NativeCrc32c, type NativeCrc32cModule, type NativeCrc32cName, loadNativeCrc32c, nativeCrc32cModules } from './crc32c-native.js';

/** Which CRC32C computes: a native library (crc32c-native.ts) or the JavaScript fallback. All give the same values. */
export type Crc32cImplementation = NativeCrc32cName | 'js';

/**
 * Bytes a process checksums with the quick-loading library (`@node-rs/crc32`) before it loads the
 * fastest (`aws-crt`, ~4-5× faster, ~70-130 ms to load): a small job never pays the load, a large one
 * (whose checksums at ~4 GB/s would cost more than the load by about a GiB) gets the speed.
 */
export const FAST_CRC32C_AFTER_BYTES = 256 * 1024 * 1024;

/**
 * `WEFT_CRC32C` picks the implementation: `auto` (the default: the fastest that loads, as above), or one
 * of `aws-crt`, `@node-rs/crc32`, `js` (falling back, in that order, when the one named does not load).
 */
const WANTED = process.env['WEFT_CRC32C'] ?? 'auto';
const CHOICES = ['auto', 'aws-crt', '@node-rs/crc32', 'js'] as const;
if (!(CHOICES as readonly string[]).includes(WANTED)) {
  throw invalidConfig('WEFT_CRC32C', `expected one of ${CHOICES.join(', ')}, got ${JSON.stringify(WANTED)}`);
}

/** The libraries to try, in order, for what WEFT_CRC32C asks. */
function candidates(wanted: string): NativeCrc32cName[] {
  if (wanted === 'js') return [];
  if (wanted === '@node-rs/crc32') return ['@node-rs/crc32'];
  return ['aws-crt', '@node-rs/crc32'];
}

let native: NativeCrc32c | undefined;
let compute: Crc32cFunction = crc32cJs;
/** Auto mode, before the fastest library was tried: bytes checksummed so far. */
let upgradeAfter = WANTED === 'auto' ? FAST_CRC32C_AFTER_BYTES : -1;
{
  for (const name of WANTED === 'auto' ? ['@node-rs/crc32' as const, 'aws-crt' as const] : candidates(WANTED)) {
    native = loadNativeCrc32c(name);
    if (native !== undefined) break;
  }
  if (native?.name === 'aws-crt') upgradeAfter = -1;
  if (native !== undefined) compute = native.crc32c;
}

function upgrade(): void {
  upgradeAfter = -1;
  const fast = loadNativeCrc32c('aws-crt');
  if (fast === undefined) return;
  native = fast;
  compute = fast.crc32c;
}

/**
 * CRC32C (Castagnoli) of `bytes`, continuing from `initial` (0 to start): native where a library loads
 * (`crc32cImplementation()`), JavaScript otherwise; the values are the same.
 */
export function crc32c(bytes: Uint8Array, initial = 0): number {
  if (upgradeAfter >= 0 && (upgradeAfter -= bytes.length) < 0) upgrade();
  return compute(bytes, initial) >>> 0;
}

/** The implementation `crc32c` uses now. */
export function crc32cImplementation(): Crc32cImplementation {
  return native?.name ?? 'js';
}

/** How a worker thread computes the same CRC32C (checksum-worker.ts). */
export interface WorkerCrc32c {
  /** The modules to try, in order, now. */
  readonly now: readonly NativeCrc32cModule[];
  /** In auto mode before the switch: the faster modules to try once the worker checksummed `afterBytes`. */
  readonly later: readonly NativeCrc32cModule[];
  readonly afterBytes: number;
}

/** What a worker thread loads to compute as `crc32c` does; undefined with the JavaScript fallback (no worker then). */
export function crc32cForWorker(): WorkerCrc32c | undefined {
  if (native === undefined) return undefined;
  const now = [{ modulePath: native.modulePath, exportName: native.exportName }];
  if (upgradeAfter < 0) return { now, later: [], afterBytes: -1 };
  return { now, later: nativeCrc32cModules('aws-crt'), afterBytes: FAST_CRC32C_AFTER_BYTES };
}

/** CRC32C's reflected polynomial. */
const POLYNOMIAL = 0x82f63b78;

function gf2Times(matrix: Uint32Array, vector: number): number {
  let sum = 0;
  for (let i = 0; vector !== 0; i++, vector >>>= 1) if ((vector & 1) !== 0) sum ^= matrix[i]!;
  return sum >>> 0;
}

function gf2Square(square: Uint32Array, matrix: Uint32Array): void {
  for (let n = 0; n < 32; n++) square[n] = gf2Times(matrix, matrix[n]!);
}

/**
 * The CRC32C of A followed by B, from `crcA = crc32c(A)`, `crcB = crc32c(B)` and B's length (zlib's
 * crc32_combine, over CRC32C's polynomial): lets a writer checksum B before it knows what precedes it.
 */
export function crc32cCombine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB <= 0) return crcA >>> 0;
  const even = new Uint32Array(32);
  const odd = new Uint32Array(32);
  odd[0] = POLYNOMIAL;
  for (let n = 1, row = 1; n < 32; n++, row <<= 1) odd[n] = row >>> 0;
  gf2Square(even, odd); // two zero bits
  gf2Square(odd, even); // four zero bits
  let crc = crcA >>> 0;
  let length = lengthB;
  for (;;) {
    gf2Square(even, odd); // first pass: one zero byte
    if (length % 2 === 1) crc = gf2Times(even, crc);
    length = Math.floor(length / 2);
    if (length === 0) break;
    gf2Square(odd, even);
    if (length % 2 === 1) crc = gf2Times(odd, crc);
    length = Math.floor(length / 2);
    if (length === 0) break;
  }
  return (crc ^ crcB) >>> 0;
}
