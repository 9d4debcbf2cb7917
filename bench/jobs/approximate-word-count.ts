// approximate-recovery.bench.ts's streaming word count for worker processes (a module path, so workers can
// load it): one ctx.generate source task at a steady rate (parallelism 1) → keyed count without a combiner
// (the job's parallelism) → collected counts. --count, --rate.
import { defineJob } from '@weft/engine';

const WORDS = Array.from({ length: 1000 }, (_, i) => `w${i.toString(36)}`);

export default defineJob((ctx) => {
  const count = ctx.args.number('count', 40_000);
  const rate = ctx.args.number('rate', 10_000);
  ctx
    .generate((seq) => WORDS[Math.imul(seq, 0x9e3779b1) >>> 22] ?? 'w', { count, splits: 2, ratePerSecond: rate, parallelism: 1 })
    .keyBy((w) => w)
    .count({ combine: false })
    .collect('counts');
}, { name: 'approximate-recovery-workers-bench' });
