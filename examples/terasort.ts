// Terasort-like: records `<10-char key><TAB><payload>` read from --input, or --records generated ones,
// sorted by key across the job's parallelism (sampled range partitioning, then a sort per range) and
// written to --output as one file in key order. Collects the record count.
//
//   npx weft run examples/terasort.ts --parallelism 4 -- --records 1000000 --output sorted.txt
import { defineJob } from '@weft/engine';
import { KEY_LENGTH, terasortRecord } from './lib/terasort-data.js';

export default defineJob(
  (ctx) => {
    const { input, output } = ctx.args;
    const records =
      input !== undefined
        ? ctx.readTextFile(input, { name: 'read-records' })
        : ctx.range(0, ctx.args.integer('records', 100_000, 0), { name: 'generate-records' }).map(terasortRecord, { name: 'record' });
    const sorted = records.sortBy((line) => line.slice(0, KEY_LENGTH), { name: 'sort' });
    if (output !== undefined) sorted.writeText(output, { name: 'write-sorted' });
    sorted
      .keyBy(() => 'records')
      .count({ name: 'count', parallelism: 1 })
      .map(([, n]) => n, { name: 'count-only' })
      .collect('records sorted');
  },
  { name: 'terasort' },
);
