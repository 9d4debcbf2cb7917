import { splitWords } from '../api/split-words.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { isWordCountInput, type OperatorContext, type Output, type StreamOperator, type TextChunkInput, type WordCountInput } from './stream-operator.js';


/**
 * The built-in word splitter (`splitWords`, `flatMapWords()`): strings in, their words out. Fused
 * (the plan's `word-count` fusion, its only output a word-count combiner) it emits no strings: it hands
 * the combiner UTF-8 bytes — a text source's chunks as they are, other lines encoded once — and the
 * combiner scans and counts them. It also takes a text source's chunks unfused (the `text-chunks`
 * fusion): then the chunk is decoded once and split, without making a string per line.
 */
export class SplitWordsOperator implements StreamOperator, TextChunkInput {
  readonly #counter: WordCountInput | undefined;
  #scratch: Buffer | undefined;

  constructor(
    private readonly output: Output,
    private readonly context: OperatorContext,
    fusedWithCount: boolean,
  ) {
    this.#counter = fusedWithCount && isWordCountInput(output) ? output : undefined;
  }

  /** True when words go to the combiner as bytes (the fused path was taken). */
  get countsBytes(): boolean {
    return this.#counter !== undefined;
  }

  collect(line: unknown): void {
    if (typeof line !== 'string') throw userFunctionError(this.context, new TypeError(`splitWords expects strings, got ${line === null ? 'null' : typeof line}`), 'splitWords');
    const counter = this.#counter;
    if (counter !== undefined) {
      let scratch = this.#scratch;
      if (scratch === undefined || scratch.length < line.length * 3) scratch = this.#scratch = Buffer.allocUnsafe(Math.max(4096, line.length * 3));
      counter.countWordsIn(scratch, 0, scratch.write(line, 0, 'utf8'));
      return;
    }
    const words = splitWords(line);
    const output = this.output;
    for (let i = 0; i < words.length; i++) output.collect(words[i]);
  }

  collectTextChunk(bytes: Uint8Array, start: number, end: number): number {
    const counter = this.#counter;
    if (counter !== undefined) return counter.countWordsIn(bytes, start, end) + 1;
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8', start, end);
    let lines = 1;
    for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++;
    const words = splitWords(text);
    const output = this.output;
    for (let i = 0; i < words.length; i++) output.collect(words[i]);
    return lines;
  }
}

