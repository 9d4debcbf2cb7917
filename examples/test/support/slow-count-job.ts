// A test job for cluster fault tests: --records N numbers, each mapped to `n % 97` after a busy wait of
// --wait-ms, counted per value and written as `value<TAB>count`. The first record a task maps drops a file
// `<--markers>/<executor pid>-<worker pid>-<record>` so a test sees which task executor runs a task while it
// still runs (a task executor runs tasks in worker processes of its own: the executor is the worker's parent).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineJob } from '@weft/engine';

export default defineJob(
  (ctx) => {
    const markers = ctx.args.string('markers');
    const waitMs = ctx.args.integer('wait-ms', 2, 0);
    let marked = false;
    ctx
      .range(0, ctx.args.integer('records', 3000, 0), { name: 'numbers' })
      .map(
        (n) => {
          if (!marked && markers !== undefined) {
            marked = true;
            writeFileSync(join(markers, `${process.ppid}-${process.pid}-${n}`), '');
          }
          const until = performance.now() + waitMs;
          while (performance.now() < until);
          return n % 97;
        },
        { name: 'slow-mod' },
      )
      .keyBy((v) => v)
      .count({ name: 'count' })
      .writeText(ctx.args.output ?? 'slow-count.tsv', { name: 'write', format: ([v, c]) => `${v}\t${c}` });
  },
  { name: 'slow-count' },
);

/** The expected output, computed without the engine. */
export function slowCountReference(records: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let n = 0; n < records; n++) counts.set(String(n % 97), (counts.get(String(n % 97)) ?? 0) + 1);
  return counts;
}
