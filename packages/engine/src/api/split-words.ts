/** JavaScript's `\s`: the separator between words. */
const WHITESPACE = /\s+/;

/**
 * The words of `line`: its maximal runs of non-whitespace, whitespace as JavaScript's `\s` (Unicode spaces,
 * U+00A0, U+2028, U+3000, U+FEFF… included), counted as written (no case folding) — exactly
 * `line.split(/\s+/).filter((w) => w !== '')`.
 *
 * Pass it to `flatMap` (`lines.flatMap(splitWords)`) or call `lines.flatMapWords()`: both add the engine's
 * built-in word splitter, which the planner fuses with a text source before it (it scans the source's
 * bytes, not lines) and with a `keyBy().count()` after it (words are counted as bytes in a table over a
 * byte arena; strings are made only for the counts it emits). Any other function is an ordinary flatMap.
 */
export function splitWords(line: string): string[] {
  const words = line.split(WHITESPACE);
  let n = 0;
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    if (w !== '') words[n++] = w;
  }
  words.length = n;
  return words;
}

/**
 * The key selector `keyBy()` uses when it is given none: the value is its own key. The planner recognizes
 * it (a count keyed by it after `splitWords` counts word bytes without making strings).
 */
export const VALUE_KEY = (value: unknown): unknown => value;
