// The reference word count of the example tests, independent of the engine and of String.split.
import assert from 'node:assert/strict';

/** Words as docs/DESIGN.md defines them, found by scanning characters (not by the engine's split). */
export function countWordsByScanning(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const blank = i === text.length || /\s/.test(text[i] as string);
    if (!blank && start === -1) start = i;
    if (blank && start !== -1) {
      const word = text.slice(start, i);
      counts.set(word, (counts.get(word) ?? 0) + 1);
      start = -1;
    }
  }
  return counts;
}

/** Parses a word count's `word<TAB>count` lines, asserting that no word is listed twice. */
export function parseCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const tab = line.lastIndexOf('\t');
    assert.ok(!counts.has(line.slice(0, tab)), `word ${line.slice(0, tab)} listed twice`);
    counts.set(line.slice(0, tab), Number(line.slice(tab + 1)));
  }
  return counts;
}
