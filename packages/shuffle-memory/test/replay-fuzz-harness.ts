// Fuzz harness (from an independent review): a PIPELINED_APPROXIMATE PipelinedSubpartition with an upstream backup, a consumer that
// checkpoints (at-least-once: snapshot = records read when the barrier arrives), fails at random (also
// while a replay is still queued) and restarts from the latest completed checkpoint with resumeFrom.
import { strict as assert } from 'node:assert';
import { FloatingCredits, RecordDeframer, RecordFramer } from '@weft/shuffle-api';
import { BufferPool } from '../src/buffer-pool.js';
import { CreditedChannelReader } from '../src/credited-channel-reader.js';
import { PipelinedSubpartition } from '../src/pipelined-subpartition.js';

function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
}

export function runScenario(seed: number, SIZE: number, replayBytes: number, steps = 400, trace?: (s: string) => void) {
  const r = rng(seed);
  const t = trace ?? (() => {});
  const pool = new BufferPool(SIZE, 1 << 20);
  const sub = new PipelinedSubpartition(pool, true, replayBytes);
  const framer = new RecordFramer(SIZE, () => pool.allocate(), (segment, length, partialRecordLength) => sub.add({ kind: 'data', segment, length, partialRecordLength }));
  let written = 0;
  let checkpointId = 0;
  // consumer model
  let state: number[] = []; // record ids applied by the current lineage
  const snapshots = new Map<number, number[]>();
  let latestCompleted: { id: number; state: number[]; position: number } | undefined;
  const pendingNotify: number[] = [];
  let fallbacks = 0;
  const gotWhole = new Set<number>();
  const askedFallbacks: string[] = [];
  let replays = 0;
  let attempt = 0;
  let reader!: CreditedChannelReader;
  let deframer: RecordDeframer;
  let expectNext: number | undefined; // the next record position this attempt must get
  const attach = (resumeFrom?: number) => {
    reader = new CreditedChannelReader(sub, pool, 1 + Math.floor(r() * 3), new FloatingCredits(0), () => {});
    assert.equal(sub.subscribe(reader, resumeFrom), true);
    deframer = new RecordDeframer(1 << 20);
    expectNext = attempt === 0 ? 0 : undefined;
  };
  const resumeFromFor = () => (latestCompleted === undefined ? undefined : latestCompleted.position);
  attach();
  const readSome = (n: number) => {
    for (let k = 0; k < n; k++) {
      const e = reader.poll();
      if (e === undefined) return;
      if (e.kind === 'event' && e.event.type === 'channel-resumed') {
        assert.equal(expectNext, undefined, `seed ${seed}: channel-resumed first, once`);
        const p = e.event.recordPosition;
        const asked = resumeFromFor();
        if (asked !== undefined && p === asked) replays++;
        else {
          fallbacks++;
          if (asked !== undefined) askedFallbacks.push(`asked ${asked} got ${p} (written ${written})`);
        }
        // the lineage's state read up to `asked`; a fallback loses [asked, p)
        expectNext = p;
        t(`  resumed ${p}`);
      } else if (e.kind === 'event' && e.event.type === 'checkpoint-barrier') {
        snapshots.set(e.event.id, [...state]);
        // completes at once (single consumer); the producer is told later
        latestCompleted = { id: e.event.id, state: [...state], position: expectNext as number };
        pendingNotify.push(e.event.id);
      } else if (e.kind === 'data') {
        assert.notEqual(expectNext, undefined, `seed ${seed}: data before channel-resumed on a resumed reader`);
        const out: Uint8Array[] = [];
        deframer.push(e.segment.subarray(0, e.length), out);
        t(`  data len ${e.length} partial ${e.partialRecordLength ?? 0} -> ${out.length} records`);
        for (const rec of out) {
          const id = new DataView(rec.buffer, rec.byteOffset, rec.byteLength).getUint32(0, true);
          assert.equal(id, expectNext, `seed ${seed}: attempt ${attempt} expected record ${expectNext}, got ${id}`);
          expectNext = (expectNext as number) + 1;
          state.push(id);
          gotWhole.add(id);
        }
        // the records are views of the segment: given back once they are read
        reader.recycle(e);
      }
    }
  };
  for (let step = 0; step < steps; step++) {
    const x = r();
    if (x < 0.55) {
      const len = 4 + Math.floor(r() < 0.15 ? r() * SIZE * 4 : r() * SIZE);
      const rec = new Uint8Array(len);
      new DataView(rec.buffer).setUint32(0, written, true);
      framer.write(rec);
      t(`write #${written} len ${len}`);
      written++;
    } else if (x < 0.62) {
      framer.flush();
      t(`barrier ${checkpointId + 1}`);
      sub.add({ kind: 'event', event: { type: 'checkpoint-barrier', id: ++checkpointId, timestamp: 0 } as never });
    } else if (x < 0.68) {
      if (pendingNotify.length > 0) sub.checkpointCompleted(pendingNotify.shift() as number);
    } else if (x < 0.95) {
      const n = 1 + Math.floor(r() * 6);
      t(`read ${n}`);
      readSome(n);
    } else {
      // the consumer fails: restart from the latest completed checkpoint
      t(`fail`);
      reader.release();
      attempt++;
      state = latestCompleted === undefined ? [] : [...latestCompleted.state];
      attach(resumeFromFor());
    }
  }
  framer.flush();
  readSome(1e9);
  return { sub, pool, state, written, fallbacks, replays, attempt, askedFallbacks, gotWhole };
}

