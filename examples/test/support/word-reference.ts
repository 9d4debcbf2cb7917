// The reference word count of the example tests, independent of the engine and of String.split.

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
