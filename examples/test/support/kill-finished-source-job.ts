// A test job for approximate recovery on a cluster: the streaming examples' generated words (streamWord),
// counted per word with a map-side combiner — which emits at the end of its input, after the final
// checkpoint, so the sources have finished when the counts merge — where the first merge anywhere
// SIGKILLs the worker process of a source other than its own (the sources write their pids to --marks),
// waits for the executor to notice, and throws: its count restarts and must read the killed source's
// partition, which died with that process. Writes `word<TAB>count` to --output.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineJob } from '@weft/engine';
import { streamWord } from '../../lib/stream-words.js';
import { markOnce, pause, pidsOf } from './process-marks.js';


export default defineJob(
  (ctx) => {
    const marks = ctx.args.string('marks');
    if (marks === undefined) throw new Error('--marks DIR is required: where the sources write their pids');
    ctx
      .generate(
        (seq: number) => {
          markOnce(marks, 'source');
          return streamWord(seq);
        },
        { name: 'words', count: ctx.args.integer('records', 30_000, 1), ratePerSecond: ctx.args.number('rate', 20_000) },
      )
      .keyBy((word) => word)
      .aggregate(
        {
          createAccumulator: () => 0,
          add: (a: number) => a + 1,
          merge: (a: number, b: number) => {
            const killed = join(marks, 'killed');
            if (existsSync(killed)) return a + b;
            writeFileSync(killed, String(process.pid));
            pause(500); // the sources' finish reaches the job master
            const victim = pidsOf(marks, 'source').find((pid) => pid !== process.pid);
            if (victim === undefined) throw new Error('no source process to kill');
            process.kill(victim, 'SIGKILL');
            pause(1500); // its executor notices, and tells the job master its finished outputs are gone
            throw new Error(`the merge killed source process ${victim} and fails once`);
          },
          getResult: (a: number) => a,
        },
        { name: 'count' },
      )
      .writeText(ctx.args.string('output', 'counts.tsv'), { name: 'write-counts', format: ([word, n]) => `${word}\t${n}` });
  },
  { name: 'kill-finished-source' },
);
