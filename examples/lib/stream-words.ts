const WORDS = ['the', 'quick', 'brown', 'fox', 'jumps', 'over', 'lazy', 'dog', 'stream', 'barrier', 'checkpoint', 'state', 'key', 'group', 'restore', 'region'];

/** Word `seq` of the streaming examples: a pure function of the sequence number (the counts of 0 … n−1 are checkable). */
export function streamWord(seq: number): string {
  const mixed = Math.imul(seq ^ (seq >>> 7), 0x9e3779b1) >>> 0;
  return WORDS[mixed % WORDS.length] as string;
}
