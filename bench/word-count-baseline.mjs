#!/usr/bin/env node
// The hand-written baseline of bench/word-count.bench.ts: one process reads the file, splits it into
// lines and words (maximal runs of non-whitespace, as the example), counts in a Map and writes
// `word<TAB>count` lines — what a person would write without an engine.
//   node bench/word-count-baseline.mjs <input> <output> [chunkBytes]   (default 16 MiB chunks)
// A StringDecoder carries a character split across two chunks over to the next one.
import { closeSync, openSync, readSync, writeFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

const [input, output, chunk] = process.argv.slice(2);
const counts = new Map();
const fd = openSync(input, 'r');
const buffer = Buffer.allocUnsafe(chunk === undefined ? 16 * 1024 * 1024 : Number(chunk));
const decoder = new StringDecoder('utf8');
let carry = '';
for (;;) {
  const n = readSync(fd, buffer, 0, buffer.length, null);
  if (n === 0) break;
  const text = carry + decoder.write(buffer.subarray(0, n));
  const end = text.lastIndexOf('\n');
  carry = end === -1 ? text : text.slice(end + 1);
  const lines = end === -1 ? [] : text.slice(0, end).split('\n');
  for (const line of lines) {
    for (const word of line.split(/\s+/)) {
      if (word !== '') counts.set(word, (counts.get(word) ?? 0) + 1);
    }
  }
}
carry += decoder.end();
for (const word of carry.split(/\s+/)) if (word !== '') counts.set(word, (counts.get(word) ?? 0) + 1);
closeSync(fd);
const out = [];
for (const [word, n] of counts) out.push(`${word}\t${n}\n`);
writeFileSync(output, out.join(''));
