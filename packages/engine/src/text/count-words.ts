import { type ByteCountTable, HASH_SEED, hashFinish } from './byte-count-table.js';

/**
 * The code points JavaScript's `\s` matches (ECMAScript WhiteSpace + LineTerminator): what separates
 * words. The byte scanner below recognizes exactly these, in UTF-8: the ASCII ones (1 byte), U+00A0 (2),
 * the others 3 bytes. `test/count-words.test.ts` checks the list against `/\s/` over every code point.
 */
export const WHITESPACE_CODE_POINTS: readonly number[] = Object.freeze([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009,
  0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff,
]);

/**
 * Counts the words of the UTF-8 text `bytes[start, end)` into `table` (each word's bytes, hashed while
 * scanned) and returns the number of `\n` bytes seen. A word is a maximal run of bytes that are not the
 * UTF-8 encoding of a `\s` code point: the same words `text.split(/\s+/)` gives on the decoded text, as
 * bytes. (Every multi-byte `\s` starts with a lead byte, never a continuation byte, and a decoder
 * replaces a malformed sequence without swallowing the lead byte after it, so the boundaries agree on
 * malformed input too; malformed bytes stay inside their word and decode to U+FFFD on output — two
 * malformed spellings of one decoded word are then two table keys, merged downstream by string.)
 * `bytes` past `end` are never read.
 */
export function countWords(table: ByteCountTable, bytes: Uint8Array, start: number, end: number): number {
  let newlines = 0;
  let i = start;
  while (i < end) {
    let c = bytes[i] as number;
    // between words: skip whitespace
    if (c <= 0x20) {
      if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) {
        if (c === 0x0a) newlines++;
        i++;
        continue;
      }
    } else if (c >= 0xc2) {
      const space = multiByteSpace(bytes, i, end, c);
      if (space !== 0) {
        i += space;
        continue;
      }
    }
    // a word starts at i: hash its bytes up to the next whitespace (which the outer loop then skips)
    const wordStart = i;
    let h = HASH_SEED;
    for (;;) {
      h = Math.imul(h ^ c, 0x01000193);
      if (++i >= end) break;
      c = bytes[i] as number;
      if (c > 0x20 && c < 0x80) continue;
      if (c <= 0x20) {
        if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) break;
      } else if (c >= 0xc2 && multiByteSpace(bytes, i, end, c) !== 0) break;
    }
    table.add(bytes, wordStart, i, hashFinish(h));
  }
  return newlines;
}

/** The length of the multi-byte `\s` starting at `bytes[i]` (lead byte `c`), or 0 when there is none. */
function multiByteSpace(bytes: Uint8Array, i: number, end: number, c: number): number {
  if (c === 0xc2) return i + 1 < end && bytes[i + 1] === 0xa0 ? 2 : 0;
  if (i + 2 >= end) return 0;
  const b1 = bytes[i + 1] as number;
  const b2 = bytes[i + 2] as number;
  switch (c) {
    case 0xe1: // U+1680
      return b1 === 0x9a && b2 === 0x80 ? 3 : 0;
    case 0xe2: // U+2000–U+200A, U+2028, U+2029, U+202F; U+205F
      if (b1 === 0x80) return (b2 >= 0x80 && b2 <= 0x8a) || b2 === 0xa8 || b2 === 0xa9 || b2 === 0xaf ? 3 : 0;
      return b1 === 0x81 && b2 === 0x9f ? 3 : 0;
    case 0xe3: // U+3000
      return b1 === 0x80 && b2 === 0x80 ? 3 : 0;
    case 0xef: // U+FEFF
      return b1 === 0xbb && b2 === 0xbf ? 3 : 0;
    default:
      return 0;
  }
}
