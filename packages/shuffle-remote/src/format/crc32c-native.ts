import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** A CRC32C function: of `bytes`, continuing from `initial` (the CRC of what came before, 0 to start). */
export type Crc32cFunction = (bytes: Uint8Array, initial: number) => number;

/**
 * A native CRC32C and how to load it again in a worker thread (`modulePath`, whose export `exportName`
 * has the same signature).
 */
export interface NativeCrc32c extends NativeCrc32cModule {
  readonly name: NativeCrc32cName;
  readonly crc32c: Crc32cFunction;
}

/**
 * The native CRC32Cs, fastest first. Both ship prebuilt per-platform binaries inside their npm packages
 * (nothing is compiled at install):
 * - `aws-crt` (the AWS Common Runtime's aws-checksums: SSE4.2 three streams at once combined with
 *   PCLMULQDQ, AVX-512 where present; ARMv8 CRC on arm64): ~16-20 GB/s on a 256 KiB block in cache here,
 *   ~5-6 GB/s from memory. An optional dependency; loading its library takes ~70-130 ms, so it is loaded
 *   only once a process has checksummed `FAST_AFTER_BYTES` (checksum.ts).
 * - `@node-rs/crc32` (one stream of SSE4.2 / ARMv8 CRC instructions): ~3.5-4.8 GB/s, loads in ~4 ms.
 *   (`@chainsafe/fast-crc32c` 4.x, also suggested, is this same library behind a wrapper.)
 */
export type NativeCrc32cName = 'aws-crt' | '@node-rs/crc32';

const require = createRequire(import.meta.url);

/** The CRC32C "123456789" must give (RFC 3720's check value): a loaded library is refused unless it does. */
const CHECK_INPUT = new Uint8Array([0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39]);
const CHECK_VALUE = 0xe3069283;

function checked(native: NativeCrc32c): NativeCrc32c | undefined {
  // the whole, and the same in two pieces (the continuation from `initial` must agree)
  const whole = native.crc32c(CHECK_INPUT, 0) >>> 0;
  const pieces = native.crc32c(CHECK_INPUT.subarray(4), native.crc32c(CHECK_INPUT.subarray(0, 4), 0)) >>> 0;
  return whole === CHECK_VALUE && pieces === CHECK_VALUE ? native : undefined;
}

/** Where a library's CRC32C may be loaded from (resolved, not loaded), in the order to try. */
export interface NativeCrc32cModule {
  readonly modulePath: string;
  readonly exportName: string;
}

/**
 * The modules that may hold `name`'s CRC32C here. aws-crt's binding is loaded directly (its index
 * spawns `ldd` to find the C runtime): glibc's build, then musl's. Empty when the package is missing.
 */
export function nativeCrc32cModules(name: NativeCrc32cName): NativeCrc32cModule[] {
  try {
    if (name === '@node-rs/crc32') return [{ modulePath: require.resolve('@node-rs/crc32'), exportName: 'crc32c' }];
    const root = dirname(require.resolve('aws-crt/package.json'));
    const runtimes = process.platform === 'linux' ? ['glibc', 'musl'] : ['cruntime'];
    return runtimes.map((runtime) => ({
      modulePath: join(root, 'dist', 'bin', `${process.platform}-${process.arch}-${runtime}`, 'aws-crt-nodejs.node'),
      exportName: 'checksums_crc32c',
    }));
  } catch {
    return [];
  }
}

/** Loads one native CRC32C; undefined when its package is missing, has no build for this platform, or computes wrong values. */
export function loadNativeCrc32c(name: NativeCrc32cName): NativeCrc32c | undefined {
  for (const { modulePath, exportName } of nativeCrc32cModules(name)) {
    try {
      const fn = (require(modulePath) as Record<string, unknown>)[exportName];
      if (typeof fn !== 'function') continue;
      const crc = fn as (bytes: Uint8Array, initial: number) => number;
      const loaded = checked({ name, crc32c: (bytes, initial) => crc(bytes, initial), modulePath, exportName });
      if (loaded !== undefined) return loaded;
    } catch {
      // not this C runtime's build, or none for this platform: the next, else another library
    }
  }
  return undefined;
}
