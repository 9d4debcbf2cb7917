#!/usr/bin/env node
// The naive contender of bench/word-count.bench.ts (issue 13's "readline + split + Map"): what a person
// writes first — lines from `readline`, `split(/\s+/)`, a Map — and `word<TAB>count` lines out.
//   node bench/word-count-naive.mjs <input> <output>
import { createReadStream, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [input, output] = process.argv.slice(2);
const counts = new Map();
for await (const line of createInterface({ input: createReadStream(input), crlfDelay: Infinity })) {
  for (const word of line.split(/\s+/)) if (word !== '') counts.set(word, (counts.get(word) ?? 0) + 1);
}
const out = [];
for (const [word, n] of counts) out.push(`${word}\t${n}\n`);
writeFileSync(output, out.join(''));
