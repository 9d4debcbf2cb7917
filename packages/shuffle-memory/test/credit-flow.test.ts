import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { BufferPool } from '../src/buffer-pool.js';
import type { ChannelEntry } from '../src/channel-entry.js';
import { CreditedChannelReader } from '../src/credited-channel-reader.js';
import { FloatingCredits } from '@weft/shuffle-api';
import { PipelinedSubpartition } from '../src/pipelined-subpartition.js';

function fill(subpartition: PipelinedSubpartition, pool: BufferPool, buffers: number): void {
  for (let i = 0; i < buffers; i++) subpartition.add({ kind: 'data', segment: pool.allocate(), length: 8 });
}

describe('credit-based flow control', () => {
  it('sends a channel no more buffers than its exclusive credits while no floating credit is free', () => {
    const pool = new BufferPool(64, 100);
    const floating = new FloatingCredits(0);
    const subpartition = new PipelinedSubpartition(pool);
    let notified = 0;
    const reader = new CreditedChannelReader(subpartition, pool, 2, floating, () => notified++);
    subpartition.subscribe(reader);
    fill(subpartition, pool, 10);
    const polled: ChannelEntry[] = [];
    for (let e = reader.poll(); e !== undefined; e = reader.poll()) polled.push(e);
    assert.equal(polled.length, 2, 'two exclusive credits: two buffers sent');
    assert.equal(subpartition.backlogSize, 8);
    reader.recycle(polled[0]!);
    assert.equal(subpartition.backlogSize, 7, 'a recycled buffer returns one credit');
    assert.ok(notified >= 3);
  });

  it('lends floating credits to a channel with a backlog and takes them back when the backlog is gone', () => {
    const pool = new BufferPool(64, 100);
    const floating = new FloatingCredits(3);
    const a = new PipelinedSubpartition(pool);
    const b = new PipelinedSubpartition(pool);
    const readerA = new CreditedChannelReader(a, pool, 1, floating, () => {});
    const readerB = new CreditedChannelReader(b, pool, 1, floating, () => {});
    a.subscribe(readerA);
    b.subscribe(readerB);
    fill(a, pool, 10);
    assert.equal(a.backlogSize, 6, '1 exclusive + 3 floating credits');
    fill(b, pool, 3);
    assert.equal(b.backlogSize, 2, 'no floating credit left for b, only its exclusive one');
    // a's consumer drains everything: floating credits go back, and b (waiting) gets them.
    for (let e = readerA.poll(); e !== undefined; e = readerA.poll()) readerA.recycle(e);
    assert.equal(a.backlogSize, 0);
    assert.equal(b.backlogSize, 0, 'b received the floating credits a returned');
  });

  it('recycles the backlog and drops later buffers once the reader is released', () => {
    const pool = new BufferPool(64, 100);
    const subpartition = new PipelinedSubpartition(pool);
    const reader = new CreditedChannelReader(subpartition, pool, 2, new FloatingCredits(0), () => {});
    subpartition.subscribe(reader);
    fill(subpartition, pool, 5);
    assert.equal(pool.buffersInUse, 5);
    reader.release();
    assert.equal(pool.buffersInUse, 0, 'everything queued or sent came back to the pool');
    fill(subpartition, pool, 3);
    assert.equal(pool.buffersInUse, 0, 'buffers for a gone consumer are recycled at once');
    assert.equal(subpartition.subscribe(reader), false, 'a released subpartition accepts no second reader');
  });
});
