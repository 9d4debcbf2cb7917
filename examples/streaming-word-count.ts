// Streaming word count: an unbounded generated stream of words (ctx.generate: word `seq` is a pure
// function of its sequence number, so any run's counts can be checked), counted per word in keyed state.
// With --checkpoint-interval the job master checkpoints it; a failure restarts it from the latest
// checkpoint, and --from-checkpoint restores it, also with another --parallelism.
//
//   npx weft run examples/streaming-word-count.ts --checkpoint-interval 1s -- --records 1000000 --output counts.tsv
//   npx weft run examples/streaming-word-count.ts --checkpoint-interval 1s -- --rate 100000    (until Ctrl-C)
//
// --records N bounds the stream (the counts are written when it ends; 0: unbounded), --rate R caps it
// at R records per second (default: as fast as it goes), --output writes `word<TAB>count` lines.
import { defineJob } from '@weft/engine';
import { streamWord } from './lib/stream-words.js';

export default defineJob(
  (ctx) => {
    const records = ctx.args.integer('records', 100_000, 0);
    const rate = ctx.args.number('rate');
    const counts = ctx
      .generate(streamWord, { name: 'words', ...(records === 0 ? {} : { count: records }), ...(rate === undefined ? {} : { ratePerSecond: rate }) })
      .keyBy((word) => word)
      .count({ name: 'count' });
    const output = ctx.args.output;
    if (output !== undefined) counts.writeText(output, { name: 'write-counts', format: ([word, n]) => `${word}\t${n}` });
    else counts.collect('counts');
  },
  { name: 'streaming-word-count' },
);
