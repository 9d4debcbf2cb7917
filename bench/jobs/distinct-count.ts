// `--keys N` distinct keys counted (each once): range → keyBy → count, then the number of keys counted.
import { defineJob } from '@weft/engine';

export default defineJob(
  (ctx) => {
    ctx
      .range(0, ctx.args.integer('keys', 1_000_000, 1), { name: 'keys' })
      .keyBy((i) => `key-${i}`)
      .count({ name: 'count' })
      .keyBy(() => 'keys')
      .count({ name: 'total', parallelism: 1 })
      .collect('keys counted');
  },
  { name: 'distinct-count' },
);
