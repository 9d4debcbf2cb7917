// Word count: the lines of --input (a file or a directory), or a generated corpus when it is absent,
// split into words (maximal runs of non-whitespace, counted as written: no case folding — the engine's
// built-in `flatMapWords()`, the same words as `line.split(/\s+/)`), counted per word with map-side
// combining, written as `word<TAB>count` lines to --output (any order), and the top words collected for
// the summary.
//
//   npx weft run examples/word-count.ts -- --input corpus.txt --output counts.tsv
//   npx weft run examples/word-count.ts -- --lines 100000 --top 20     (generated corpus)
import { defineJob } from '@weft/engine';
import { corpusLine } from './lib/corpus.js';
import { topK } from './lib/top-k.js';

export default defineJob(
  (ctx) => {
    const { input, output } = ctx.args;
    const lines =
      input !== undefined
        ? ctx.readTextFile(input, { name: 'read-lines' })
        : ctx.range(0, ctx.args.integer('lines', 200_000, 0), { name: 'generate-lines' }).map(corpusLine, { name: 'corpus-line' });
    // The built-in splitter and a count keyed by the word itself: the planner fuses them with the text
    // source (bytes are scanned and counted; strings are made only for the counts).
    const counts = lines
      .flatMapWords({ name: 'split-words' })
      .keyBy()
      .count({ name: 'count' });
    if (output !== undefined) counts.writeText(output, { name: 'write-counts', format: ([word, n]) => `${word}\t${n}` });
    counts
      .keyBy(() => 0)
      .aggregate(topK(ctx.args.integer('top', 10, 1)), { name: 'top-words', parallelism: 1 })
      .flatMap(([, best]) => best.map(([word, n]) => `${word}\t${n}`), { name: 'format-top', parallelism: 1 })
      .collect('top words');
  },
  { name: 'word-count' },
);
