// The byte scanner of the fused word count against JavaScript's own split: the words of UTF-8 bytes must
// be exactly `text.split(/\s+/).filter(Boolean)` of the decoded text — every `\s` code point, non-ASCII
// words, code points that share a lead byte with a space, malformed bytes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { splitWords } from '@weft/engine';
import { ByteCountTable, hashBytes } from '../src/text/byte-count-table.js';
import { countWords, WHITESPACE_CODE_POINTS } from '../src/text/count-words.js';

/** The oracle: what JavaScript splits, counted. */
function oracle(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const w of text.split(/\s+/).filter(Boolean)) counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

/** The scanner's counts, merged by decoded string (as the reducer merges them). */
function scanned(bytes: Uint8Array, start = 0, end = bytes.length): Map<string, number> {
  const table = new ByteCountTable();
  countWords(table, bytes, start, end);
  const counts = new Map<string, number>();
  for (const [w, n] of table.entries()) counts.set(w, (counts.get(w) ?? 0) + n);
  return counts;
}

/** mulberry32 */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    let t = (s = (s + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Word characters: ASCII, Latin-1, CJK, an emoji (4 bytes), and non-spaces that share a lead byte (and
// sometimes a second byte) with a space: U+0085 (NEL), U+00A1, U+1681, U+180E, U+200B, U+2030, U+2060,
// U+205E, U+3001, U+FEFE, U+FFFD.
const WORD_CHARS = ['a', 'Z', '0', '-', "'", 'é', 'ü', 'ñ', '日', '本', '😀', '\u0085', '\u00a1', '\u1681', '\u180e', '\u200b', '\u2030', '\u2060', '\u205e', '\u3001', '\ufefe', '\ufffd'];

function generatedText(seed: number, words: number): string {
  const next = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  let text = next() < 0.5 ? String.fromCodePoint(pick(WHITESPACE_CODE_POINTS)) : '';
  for (let i = 0; i < words; i++) {
    const length = 1 + Math.floor(next() * 4);
    for (let k = 0; k < length; k++) text += pick(WORD_CHARS);
    const spaces = 1 + Math.floor(next() * 3);
    for (let k = 0; k < spaces; k++) text += String.fromCodePoint(pick(WHITESPACE_CODE_POINTS));
  }
  return text;
}

describe('the word byte scanner', () => {
  it('knows exactly the code points /\\s/ matches', () => {
    const matched: number[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      if (/\s/.test(String.fromCodePoint(cp))) matched.push(cp);
    }
    assert.deepEqual([...WHITESPACE_CODE_POINTS].sort((a, b) => a - b), matched);
  });

  it('splits each whitespace code point alone between two words', () => {
    for (const cp of WHITESPACE_CODE_POINTS) {
      const text = `ab${String.fromCodePoint(cp)}日本${String.fromCodePoint(cp)}ab`;
      assert.deepEqual(scanned(Buffer.from(text)), new Map([['ab', 2], ['日本', 1]]), `U+${cp.toString(16)}`);
    }
  });

  it('finds the same words as text.split(/\\s+/) on 300 generated texts of every whitespace and non-ASCII words', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const text = generatedText(seed, 200);
      assert.deepEqual(scanned(Buffer.from(text)), oracle(text), `seed ${seed}`);
    }
  });

  it('finds the same words as split on the decoded text of malformed UTF-8 (random bytes)', () => {
    const interesting = [0x20, 0x0a, 0x09, 0xc2, 0xa0, 0xe1, 0x9a, 0x80, 0xe2, 0x81, 0x9f, 0xa8, 0xe3, 0xef, 0xbb, 0xbf, 0x61, 0xf0, 0x9f, 0xff];
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed);
      const bytes = Uint8Array.from({ length: 300 }, () => (next() < 0.7 ? (interesting[Math.floor(next() * interesting.length)] as number) : Math.floor(next() * 256)));
      assert.deepEqual(scanned(bytes), oracle(Buffer.from(bytes).toString('utf8')), `seed ${seed}`);
    }
  });

  it('reads only bytes[start, end): a space cut by the end is a word byte, as a decoder sees it', () => {
    const bytes = Buffer.from('zz x\u00a0y\u3000w');
    const end = bytes.indexOf(0xa0); // cuts U+00A0 after its lead byte
    assert.deepEqual(scanned(bytes, 3, end), oracle(bytes.toString('utf8', 3, end)));
    assert.deepEqual(scanned(bytes, 3, end), new Map([['x\ufffd', 1]]));
    const cut3000 = bytes.indexOf(0xe3) + 2;
    assert.deepEqual(scanned(bytes, 0, cut3000), oracle(bytes.toString('utf8', 0, cut3000)));
  });

  it('counts newlines', () => {
    const table = new ByteCountTable();
    assert.equal(countWords(table, Buffer.from('a\nb\r\n\n c'), 0, 8), 3);
  });
});

describe('the byte count table', () => {
  it('agrees with a Map on 100,000 keys of random bytes (collisions, growth, clear)', () => {
    const next = random(7);
    const table = new ByteCountTable();
    const reference = new Map<string, number>();
    const keys = Array.from({ length: 20_000 }, () => Buffer.from(Array.from({ length: Math.floor(next() * 12) }, () => Math.floor(next() * 4) + 0x61)));
    for (let i = 0; i < 100_000; i++) {
      const key = keys[Math.floor(next() * keys.length)] as Buffer;
      table.add(key, 0, key.length, hashBytes(key, 0, key.length));
      reference.set(key.toString(), (reference.get(key.toString()) ?? 0) + 1);
    }
    assert.equal(table.size, reference.size);
    assert.deepEqual(new Map(table.entries()), reference);
    table.clear();
    assert.equal(table.size, 0);
    table.add(Buffer.from('x'), 0, 1, hashBytes(Buffer.from('x'), 0, 1), 5);
    assert.deepEqual([...table.entries()], [['x', 5]]);
  });

  it('keeps splitWords equal to split(/\\s+/) without empty words', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const text = generatedText(seed, 50);
      assert.deepEqual(splitWords(text), text.split(/\s+/).filter(Boolean));
    }
    assert.deepEqual(splitWords(''), []);
    assert.deepEqual(splitWords('\u3000 '), []);
  });
});
