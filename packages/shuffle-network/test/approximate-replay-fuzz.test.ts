// Fuzz (from an independent review): network ProducedSubpartition with an upstream backup; a consumer that checkpoints
// (at-least-once), fails at random (also while a replay is queued; sometimes its new view subscribes
// before the old one is seen gone) and resumes from the latest completed checkpoint.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { RecordDeframer, RecordFramer } from '@weft/shuffle-api';
import { BufferPool } from '../src/server/buffer-pool.js';
import { ProducedSubpartition, type SubpartitionEntry, type SubpartitionView } from '../src/server/produced-subpartition.js';

function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s / 2 ** 32;
  };
}

function run(seed: number, SIZE: number, replayBytes: number, steps = 400) {
  const r = rng(seed);
  const pool = new BufferPool(SIZE, 1 << 20);
  const sub = new ProducedSubpartition(pool, () => {}, true, replayBytes);
  const framer = new RecordFramer(SIZE, () => pool.allocate(), (segment, length, partialRecordLength) => sub.add({ kind: 'data', segment, length, partialRecordLength }));
  let written = 0, id = 0, attempt = 0;
  let state: number[] = [];
  let completed: { state: number[]; position: number } | undefined;
  const notify: number[] = [];
  const askedFallbacks: string[] = [];
  let view!: SubpartitionView & { inbox: SubpartitionEntry[] };
  let deframer: RecordDeframer;
  let next: number | undefined;
  const asked = () => completed?.position;
  const attach = (resumeFrom?: number) => {
    const inbox: SubpartitionEntry[] = [];
    view = { credit: 1 + Math.floor(r() * 3), inbox, transmit: (e) => void inbox.push(e) };
    assert.equal(sub.subscribe(view, resumeFrom), true);
    deframer = new RecordDeframer(1 << 20);
    next = attempt === 0 ? 0 : undefined;
  };
  attach();
  const read = (n: number) => {
    for (let k = 0; k < n; k++) {
      const e = view.inbox.shift();
      if (e === undefined) return;
      if (e.kind === 'event' && e.event.type === 'channel-resumed') {
        assert.equal(next, undefined);
        next = e.event.recordPosition;
        if (asked() !== undefined && next !== asked()) askedFallbacks.push(`asked ${asked()} got ${next}`);
      } else if (e.kind === 'event' && e.event.type === 'checkpoint-barrier') {
        completed = { state: [...state], position: next as number };
        notify.push(e.event.id);
      } else if (e.kind === 'data') {
        assert.notEqual(next, undefined, `seed ${seed}: data before channel-resumed`);
        const out: Uint8Array[] = [];
        deframer.push(e.segment.subarray(0, e.length), out);
        for (const rec of out) {
          const got = new DataView(rec.buffer, rec.byteOffset, rec.byteLength).getUint32(0, true);
          assert.equal(got, next, `seed ${seed}: attempt ${attempt} expected ${next} got ${got}`);
          next = (next as number) + 1;
          state.push(got);
        }
        // the records are views of the segment: given back once they are read
        pool.recycle(e.segment);
        view.credit++;
        sub.send();
      }
    }
  };
  for (let step = 0; step < steps; step++) {
    const x = r();
    if (x < 0.55) {
      const len = 4 + Math.floor(r() < 0.15 ? r() * SIZE * 4 : r() * SIZE);
      const rec = new Uint8Array(len);
      new DataView(rec.buffer).setUint32(0, written++, true);
      framer.write(rec);
    } else if (x < 0.62) {
      framer.flush();
      sub.add({ kind: 'event', event: { type: 'checkpoint-barrier', id: ++id, timestampMs: 0 } });
    } else if (x < 0.68) {
      if (notify.length > 0) sub.checkpointCompleted(notify.shift() as number);
    } else if (x < 0.95) {
      read(1 + Math.floor(r() * 6));
    } else {
      const old = view;
      const replaceFirst = r() < 0.5;
      if (!replaceFirst) sub.viewGone(old);
      for (const e of old.inbox) if (e.kind === 'data') pool.recycle(e.segment);
      attempt++;
      state = completed === undefined ? [] : [...completed.state];
      attach(asked());
      if (replaceFirst) sub.viewGone(old); // the old connection is seen closed after the new view came
    }
  }
  framer.flush();
  read(1e9);
  return { state, askedFallbacks, pool };
}

describe('replay fuzz (network subpartition)', () => {
  it('a 1 MiB log replays every asked position; the records each attempt gets are whole, in order, contiguous', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const { askedFallbacks } = run(seed, 16, 1 << 20);
      assert.deepEqual(askedFallbacks, [], `seed ${seed}`);
    }
  });
  it('an overflowing log: still whole, in order, contiguous after each channel-resumed', () => {
    for (let seed = 1; seed <= 300; seed++) run(seed, 16, 80);
  });
});
