// A test job for approximate recovery on local workers: two sources (even and odd sequence numbers) count
// `k<floor(seq / 2) % keys>` with a map-side combiner, which emits its partial counts after the final
// checkpoint — both in the same key order, so the counts merge from their first records on — then the
// source finishes. The counts merge slowly, so a finished source's tail (more than a consumer's credit) is
// still unread when the first merge anywhere SIGKILLs the worker process of a source that runs no count
// (the sources and counts write their pids to --marks). That count does not fail: it reads on until its channel of the killed
// source goes unavailable, and waits for a producer attempt that nothing would start. Writes
// `key<TAB>count` to --output.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineJob } from '@weft/engine';
import { markOnce, pause, pidsOf } from './process-marks.js';

export default defineJob(
  (ctx) => {
    const marks = ctx.args.string('marks');
    if (marks === undefined) throw new Error('--marks DIR is required: where the sources and counts write their pids');
    const keys = ctx.args.integer('keys', 60_000, 1);
    const slowMs = ctx.args.number('merge-ms', 0.05);
    ctx
      .generate(
        (seq: number) => {
          markOnce(marks, 'source');
          return `k${Math.floor(seq / 2) % keys}`;
        },
        { name: 'words', count: ctx.args.integer('records', 300_000, 1), splits: 2, ratePerSecond: ctx.args.number('rate', 400_000) },
      )
      .keyBy((key) => key)
      .aggregate(
        {
          createAccumulator: () => 0,
          add: (a: number) => a + 1,
          merge: (a: number, b: number) => {
            if (markOnce(marks, 'count')) killOnce(marks);
            pause(slowMs);
            return a + b;
          },
          getResult: (a: number) => a,
        },
        { name: 'count' },
      )
      .writeText(ctx.args.string('output', 'counts.tsv'), { name: 'write-counts', format: ([key, n]) => `${key}\t${n}` });
  },
  { name: 'kill-source-while-read' },
);

/** The first merge of the job: once both counts merge, waits for the sources to finish, then kills one that runs no count. */
function killOnce(marks: string): void {
  try {
    writeFileSync(join(marks, 'killer'), String(process.pid), { flag: 'wx' });
  } catch {
    return; // the other count kills
  }
  for (let waited = 0; pidsOf(marks, 'count').length < 2 && waited < 5000; waited += 10) pause(10);
  pause(500); // the sources finish (their tails fit their buffer pools) and the job master hears of it
  const counts = new Set(pidsOf(marks, 'count'));
  const victim = pidsOf(marks, 'source').find((pid) => !counts.has(pid));
  if (victim === undefined) {
    writeFileSync(join(marks, 'no-victim'), '');
    return;
  }
  process.kill(victim, 'SIGKILL');
  writeFileSync(join(marks, 'killed'), String(victim));
}
