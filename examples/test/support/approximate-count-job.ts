// A test job for approximate recovery on a cluster: the streaming examples' generated words (streamWord) at
// --rate records/s, --records of them, counted per word WITHOUT a map-side combiner (a combiner would hold
// every count until the bounded stream ends, so nothing would be in flight to recover), written as
// `word<TAB>count` to --output.
import { defineJob } from '@weft/engine';
import { streamWord } from '../../lib/stream-words.js';

export default defineJob(
  (ctx) => {
    ctx
      .generate(streamWord, { name: 'words', count: ctx.args.integer('records', 30_000, 1), ratePerSecond: ctx.args.number('rate', 6000) })
      .keyBy((word) => word)
      .count({ name: 'count', combine: false })
      .writeText(ctx.args.string('output', 'counts.tsv'), { name: 'write-counts', format: ([word, n]) => `${word}\t${n}` });
  },
  { name: 'approximate-count' },
);
