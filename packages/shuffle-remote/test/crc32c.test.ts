import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { FAST_CRC32C_AFTER_BYTES, crc32c, crc32cImplementation } from '../src/format/checksum.js';
import { crc32cJs } from '../src/format/crc32c-js.js';
import { type NativeCrc32c, loadNativeCrc32c, nativeCrc32cModules } from '../src/format/crc32c-native.js';

/** RFC 3720 (iSCSI) appendix B.4 and the common check value. */
const VECTORS: [string, Uint8Array, number][] = [
  ['"123456789"', new TextEncoder().encode('123456789'), 0xe3069283],
  ['32 zero bytes', new Uint8Array(32), 0x8a9136aa],
  ['32 bytes of 0xff', new Uint8Array(32).fill(0xff), 0x62a8ab43],
  ['32 incrementing bytes', Uint8Array.from({ length: 32 }, (_, i) => i), 0x46dd794e],
  ['32 decrementing bytes', Uint8Array.from({ length: 32 }, (_, i) => 31 - i), 0x113fdb5c],
  ['nothing', new Uint8Array(0), 0],
];

const natives = (['aws-crt', '@node-rs/crc32'] as const).map((name) => loadNativeCrc32c(name)).filter((n): n is NativeCrc32c => n !== undefined);
const implementations: [string, (bytes: Uint8Array, initial: number) => number][] = [
  ['js', crc32cJs],
  ...natives.map((n): [string, (bytes: Uint8Array, initial: number) => number] => [n.name, (b, i) => n.crc32c(b, i) >>> 0]),
  ['crc32c (the one in use)', crc32c],
];

/** Random buffers of awkward lengths, at odd offsets, some in shared memory, with random initial CRCs. */
function randomCases(): { bytes: Uint8Array; initial: number }[] {
  const cases: { bytes: Uint8Array; initial: number }[] = [];
  let seed = 7;
  const next = (): number => (seed = (seed * 1103515245 + 12345) >>> 0);
  for (const length of [1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 256, 1000, 4095, 4096, 65537, 262144 + 5, 1 << 20]) {
    const shared = next() % 2 === 0;
    const backing = shared ? new Uint8Array(new SharedArrayBuffer(length + 16)) : new Uint8Array(length + 16);
    randomFillSync(backing);
    const offset = next() % 9;
    cases.push({ bytes: backing.subarray(offset, offset + length), initial: next() % 3 === 0 ? 0 : next() });
  }
  return cases;
}

describe('CRC32C', () => {
  it('loads aws-crt (when installed) and @node-rs/crc32 natively on this platform', () => {
    assert.ok(
      natives.some((n) => n.name === '@node-rs/crc32'),
      '@node-rs/crc32 is a dependency and ships a build for this platform',
    );
    if (nativeCrc32cModules('aws-crt').length > 0) assert.ok(natives.some((n) => n.name === 'aws-crt'), 'aws-crt is installed: its binding must load');
  });

  for (const [name, fn] of implementations) {
    it(`${name} gives the known CRC32C vectors`, () => {
      for (const [what, bytes, expected] of VECTORS) assert.equal(fn(bytes, 0), expected, what);
    });
  }

  it('gives the same values in every implementation, native and JavaScript, on random buffers and initial values', () => {
    for (const { bytes, initial } of randomCases()) {
      const expected = crc32cJs(bytes, initial);
      for (const [name, fn] of implementations) assert.equal(fn(bytes, initial), expected, `${name}, ${bytes.length} bytes from ${initial}`);
    }
  });

  it('continues from an initial CRC: the CRC of A then B is the CRC of B from the CRC of A', () => {
    const bytes = randomFillSync(new Uint8Array(100_003));
    for (const [name, fn] of implementations) {
      for (const cut of [0, 1, 4096, 50_000, 100_003]) {
        assert.equal(fn(bytes.subarray(cut), fn(bytes.subarray(0, cut), 0)), fn(bytes, 0), `${name}, cut at ${cut}`);
      }
    }
  });

  it('moves to the fastest library once the process checksummed FAST_CRC32C_AFTER_BYTES, with unchanged values', () => {
    const block = randomFillSync(new Uint8Array(1 << 20));
    const before = crc32c(block, 0);
    const fastInstalled = natives.some((n) => n.name === 'aws-crt');
    for (let done = 0; done <= FAST_CRC32C_AFTER_BYTES; done += block.length) assert.equal(crc32c(block, 0), before);
    assert.equal(crc32c(block, 0), crc32cJs(block, 0));
    assert.equal(crc32cImplementation(), fastInstalled ? 'aws-crt' : '@node-rs/crc32');
  });

  it('falls back to JavaScript when WEFT_CRC32C=js, and refuses an unknown WEFT_CRC32C naming it', () => {
    const script = "import('./src/format/checksum.ts').then((m) => console.log(m.crc32cImplementation(), m.crc32c(new TextEncoder().encode('123456789')).toString(16)))";
    const run = (value: string) =>
      spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', '-e', script], {
        cwd: new URL('..', import.meta.url),
        env: { ...process.env, WEFT_CRC32C: value },
        encoding: 'utf8',
      });
    const js = run('js');
    assert.equal(js.status, 0, js.stderr);
    assert.equal(js.stdout.trim(), 'js e3069283');
    const nodeRs = run('@node-rs/crc32');
    assert.equal(nodeRs.stdout.trim(), '@node-rs/crc32 e3069283');
    const bad = run('sse9');
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /WEFT_CRC32C/);
  });
});
