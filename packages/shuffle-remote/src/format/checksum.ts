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

/** a(x) * b(x) modulo CRC32C's polynomial, both reflected (zlib's multmodp). */
function multModP(a: number, b: number): number {
  let m = 0x8000_0000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLYNOMIAL : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) modulo the polynomial. */
const X2N = new Uint32Array(32);
{
  let p = 0x4000_0000; // x^1
  X2N[0] = p;
  for (let k = 1; k < 32; k++) X2N[k] = p = multModP(p, p);
}

/** x^(n * 2^k) modulo the polynomial (zlib's x2nmodp). */
function x2nModP(n: number, k: number): number {
  let p = 0x8000_0000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/**
 * The CRC32C of A followed by B, from `crcA = crc32c(A)`, `crcB = crc32c(B)` and B's length (zlib's
 * crc32_combine, over CRC32C's polynomial: about log2(lengthB) polynomial products, a microsecond): lets
 * a writer checksum B before it knows what precedes it.
 */
export function crc32cCombine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB <= 0) return crcA >>> 0;
  return (multModP(x2nModP(lengthB, 3), crcA >>> 0) ^ crcB) >>> 0;
}
