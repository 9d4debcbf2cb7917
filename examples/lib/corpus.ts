// A deterministic text corpus for word count: Zipf-like word frequencies (a few very common words, a
// long tail), a little non-ASCII, punctuation glued to words, and irregular whitespace (double spaces,
// tabs, leading blanks). Line `i` is always the same, so any process can generate any share of it.
import { closeSync, openSync, writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'to', 'vi', 'we', 'zu', 'an', 'el', 'is', 'or', 'un', 'th', 'qu', 'ph', 'ch', 'sh'];
const SPECIAL = ['the', 'of', 'and', 'a', 'to', 'in', 'is', 'it', 'that', 'was', 'café', 'naïve', 'über', '日本', 'ñandú', "don't", 'end.', '(aside)', 'x-ray', '42'];
const VOCABULARY_SIZE = 50_000;

function buildVocabulary(): string[] {
  const words = [...SPECIAL];
  for (let i = 0; words.length < VOCABULARY_SIZE; i++) {
    let n = i;
    let word = '';
    do {
      word += SYLLABLES[n % SYLLABLES.length];
      n = Math.floor(n / SYLLABLES.length);
    } while (n > 0);
    words.push(i % 97 === 0 ? `${word}é` : i % 89 === 0 ? word.toUpperCase() : word);
  }
  return words;
}

const VOCABULARY = buildVocabulary();
const LOG_SIZE = Math.log(VOCABULARY.length + 1);

/** mulberry32 step on a 32-bit state; returns [0, 1). */
function next(state: { s: number }): number {
  let t = (state.s = (state.s + 0x6d2b79f5) | 0);
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** Line `index` of the corpus (without its newline). */
export function corpusLine(index: number): string {
  const state = { s: Math.imul(index + 1, 0x9e3779b1) ^ 0x5bd1e995 };
  const words = 4 + Math.floor(next(state) * 13);
  let line = next(state) < 0.05 ? ' ' : '';
  for (let w = 0; w < words; w++) {
    // log-uniform rank: frequency ~ 1/rank (Zipf with s = 1)
    const rank = Math.min(VOCABULARY.length - 1, Math.floor(Math.exp(next(state) * LOG_SIZE)) - 1);
    if (w > 0) {
      const r = next(state);
      line += r < 0.9 ? ' ' : r < 0.96 ? '  ' : '\t';
    }
    line += VOCABULARY[rank];
  }
  return line;
}

/** Writes corpus lines 0, 1, … to `path` until it holds at least `bytes` bytes. */
export function writeCorpus(path: string, bytes: number): { bytes: number; lines: number } {
  const fd = openSync(path, 'w');
  let written = 0;
  let lines = 0;
  try {
    while (written < bytes) {
      const chunk: string[] = [];
      for (let k = 0; k < 10_000 && written < bytes; k++) {
        const line = `${corpusLine(lines++)}\n`;
        chunk.push(line);
        written += Buffer.byteLength(line);
      }
      writeSync(fd, chunk.join(''));
    }
  } finally {
    closeSync(fd);
  }
  return { bytes: written, lines };
}

// `node --import tsx examples/lib/corpus.ts <path> <bytes>` writes a corpus file (npm start uses this).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [path, bytes] = process.argv.slice(2);
  if (path === undefined || !Number.isFinite(Number(bytes))) {
    process.stderr.write('usage: corpus.ts <path> <bytes>\n');
    process.exit(2);
  }
  const written = writeCorpus(path, Number(bytes));
  process.stdout.write(`wrote ${written.lines} lines, ${written.bytes} bytes to ${path}\n`);
}
