// Windowed count: an event-time tumbling count per key over a generated stream with timestamps
// (ctx.generate: event `seq` — its key and its timestamp, up to 400 ms out of order — is a pure function
// of its sequence number, so any run's windows can be checked). Watermarks: bounded out-of-orderness,
// emitted in band from the source; each window is emitted when the watermark passes its end, and the
// end of a bounded stream fires the rest. With --checkpoint-interval the open windows are checkpointed
// in keyed state; a failure restarts from the latest checkpoint, --from-checkpoint restores it.
//
//   npx weft run examples/windowed-count.ts -- --records 200000 --window-ms 1000 --output windows.tsv
//   npx weft run examples/windowed-count.ts --checkpoint-interval 1s -- --rate 50000     (until Ctrl-C)
//
// --records N bounds the stream (0: unbounded), --rate R caps it at R records per second, --window-ms
// the window size (default 1000), --out-of-orderness-ms the watermark's bound (default 500: no event is
// late), --output writes `key<TAB>start<TAB>end<TAB>count` lines (end exclusive).
import { defineJob, tumblingEventTimeWindows } from '@weft/engine';
import { streamEvent } from './lib/stream-events.js';

export default defineJob(
  (ctx) => {
    const records = ctx.args.integer('records', 100_000, 0);
    const rate = ctx.args.number('rate');
    const windowMs = ctx.args.integer('window-ms', 1000, 1);
    const outOfOrdernessMs = ctx.args.integer('out-of-orderness-ms', 500, 0);
    const windows = ctx
      .generate(streamEvent, { name: 'events', ...(records === 0 ? {} : { count: records }), ...(rate === undefined ? {} : { ratePerSecond: rate }) })
      .assignTimestampsAndWatermarks({ timestamp: (e) => e.ts, outOfOrdernessMs, intervalMs: 50 }, { name: 'timestamps' })
      .keyBy((e) => e.key)
      .window(tumblingEventTimeWindows(windowMs))
      .count({ name: 'count' });
    const output = ctx.args.output;
    if (output !== undefined) windows.writeText(output, { name: 'write-windows', format: (w) => `${w.key}\t${w.start}\t${w.end}\t${w.value}` });
    else windows.collect('windows');
  },
  { name: 'windowed-count' },
);
