import { strict as assert } from 'node:assert';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isShuffleError } from '@weft/shuffle-api';
import { createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { writerBudgetForTest } from './helpers/internals.js';
import { readPartition, rejection, shuffleFixture, tagOf, taggedRecord, writePartition } from './helpers/shuffle-fixture.js';

async function objectFiles(dir: string): Promise<string[]> {
  const entries = await readdir(join(dir, 'data'), { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath ?? '', e.name));
}

function assertCode(error: unknown, code: string, partitionId?: string): void {
  assert.ok(isShuffleError(error), `expected ${code}, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  if (partitionId !== undefined) assert.equal(error.context['partitionId'], partitionId, error.message);
}

describe('remote writer: memory and layout', () => {
  it('streams a partition 32 times its memory budget, pausing the producer and never holding more than the budget', async () => {
    await using fx = await shuffleFixture({ producerMemoryBytes: 1024 * 1024 });
    const descriptor = await fx.register({ job: 'big', subpartitions: 4 });
    const writer = await fx.env.createResultPartitionWriter({ descriptor });
    const limit = writer.metrics.memoryLimitBytes;
    assert.equal(limit, 1024 * 1024);
    const recordBytes = 3000;
    let peak = 0;
    let pauses = 0;
    const records = Math.ceil((32 * limit) / recordBytes);
    for (let i = 0; i < records; i++) {
      const more = writer.emitRecord(taggedRecord(7, i % 4, i, recordBytes), i % 4);
      peak = Math.max(peak, writer.metrics.bufferedBytes);
      if (!more) {
        pauses++;
        await writer.ready();
      }
    }
    await writer.finish();
    await writer.close();
    assert.ok(peak <= limit + recordBytes + 4, `held ${peak} bytes, budget ${limit}`);
    assert.ok(pauses > 0, 'the producer must have been asked to wait');
    const listed = await fx.master.listPartitions(descriptor.jobId);
    assert.equal(listed[0]!.totalBytes, records * (recordBytes + 4));
    const read = await readPartition(fx.env, descriptor);
    assert.equal(read.flat().length, records);
    read.forEach((list, s) => list.forEach((record, k) => assert.deepEqual(tagOf(record), { tag: 7, s, i: s + 4 * k })));
  });

  for (const { name, recordBytes, copies } of [
    { name: 'emitRecord of a 32 MiB record', recordBytes: 32 * 1024 * 1024, copies: 1 },
    { name: 'broadcastRecord of a 4 MiB record to 2 subpartitions', recordBytes: 4 * 1024 * 1024, copies: 2 },
  ]) {
    it(`holds at most its budget plus the record's blocks for ${name} (1 MiB budget), is back within the budget once ready() resolves, and reads it back intact`, async () => {
      const producerMemoryBytes = 1024 * 1024;
      await using fx = await shuffleFixture({ producerMemoryBytes });
      const descriptor = await fx.register({ job: 'oversized', subpartitions: 2 });
      const writer = await fx.env.createResultPartitionWriter({ descriptor });
      const limit = writer.metrics.memoryLimitBytes;
      assert.equal(limit, producerMemoryBytes);
      const { blockBytes } = writerBudgetForTest(producerMemoryBytes, 2, 256 * 1024, 0);
      // the documented bound: the budget, plus the record framed (length prefix included) in whole blocks, per copy
      const bound = limit + copies * Math.ceil((recordBytes + 4) / blockBytes) * blockBytes;
      let peak = 0;
      const sample = (): void => {
        peak = Math.max(peak, writer.metrics.bufferedBytes);
      };
      // small records first, so the writer is mid-region with spills in flight when the big one comes
      for (let i = 0; i < 1000; i++) {
        const more = writer.emitRecord(taggedRecord(1, i % 2, i, 300), i % 2);
        sample();
        if (!more) await writer.ready();
      }
      const big = taggedRecord(2, 0, 1000, recordBytes);
      const more = copies === 1 ? writer.emitRecord(big, 0) : writer.broadcastRecord(big);
      sample();
      assert.equal(more, false, 'a region that outgrew its share asks the producer to wait');
      let waiting = true;
      const poll = (): void => {
        sample();
        if (waiting) setImmediate(poll);
      };
      poll();
      try {
        await writer.ready();
      } finally {
        waiting = false;
      }
      sample();
      assert.ok(writer.metrics.bufferedBytes <= limit, `after ready() the writer holds ${writer.metrics.bufferedBytes} bytes, budget ${limit}`);
      assert.ok(peak > limit, `the record itself (${recordBytes} bytes) is held before it is spilled: peak ${peak}`);
      assert.ok(peak <= bound, `held ${peak} bytes, more than the budget ${limit} plus the record's blocks (bound ${bound})`);
      // then several regions' worth (~200 KiB each at this budget) of small records: none may land between the big record's pieces
      for (let i = 1001; i < 5001; i++) if (!writer.emitRecord(taggedRecord(1, i % 2, i, 300), i % 2)) await writer.ready();
      await writer.finish();
      await writer.close();
      const read = await readPartition(fx.env, descriptor);
      const expected = (s: number): number[] => [...Array.from({ length: 5001 }, (_, i) => i).filter((i) => i !== 1000 && i % 2 === s)];
      for (let s = 0; s < 2; s++) {
        const bigAt = copies === 2 || s === 0 ? 500 : -1;
        const list = read[s]!;
        const small = list.filter((_, k) => k !== bigAt);
        assert.deepEqual(small.map((r) => tagOf(r).i), expected(s), `subpartition ${s} keeps its records in order`);
        if (bigAt >= 0) assert.ok(Buffer.from(big).equals(list[bigAt]!), `subpartition ${s} reads the ${recordBytes}-byte record back byte for byte`);
      }
    });
  }

  it("caps a writer's memory at the request's memoryBytes (its task's share), reads its partition back intact, and refuses a memoryBytes that is not a positive whole number", async () => {
    await using fx = await shuffleFixture({ producerMemoryBytes: 8 * 1024 * 1024 });
    const descriptor = await fx.register({ job: 'share', subpartitions: 2 });
    const writer = await fx.env.createResultPartitionWriter({ descriptor, memoryBytes: 512 * 1024 });
    assert.equal(writer.metrics.memoryLimitBytes, 512 * 1024);
    const recordBytes = 1000;
    const records = Math.ceil((8 * 512 * 1024) / recordBytes);
    let peak = 0;
    for (let i = 0; i < records; i++) {
      if (!writer.emitRecord(taggedRecord(3, i % 2, i, recordBytes), i % 2)) await writer.ready();
      peak = Math.max(peak, writer.metrics.bufferedBytes);
    }
    await writer.finish();
    await writer.close();
    assert.ok(peak <= 512 * 1024 + recordBytes + 4, `held ${peak} bytes, share 524288`);
    // a share larger than the setting leaves the setting
    const wide = await fx.env.createResultPartitionWriter({ descriptor: await fx.register({ job: 'wide', subpartitions: 1 }), memoryBytes: 1024 ** 3 });
    assert.equal(wide.metrics.memoryLimitBytes, 8 * 1024 * 1024);
    await wide.close();
    // a gate given a small share (reads of a quarter of it) reads the same records
    const gate = await fx.env.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 }, memoryBytes: 64 * 1024 });
    const read: Uint8Array[][] = [[], []];
    try {
      for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
        if (batch.kind === 'records') for (const record of batch.records) read[batch.channel]!.push(record.slice());
      }
    } finally {
      await gate.close();
    }
    assert.equal(read.flat().length, records);
    read.forEach((list, s) => list.forEach((record, k) => assert.deepEqual(tagOf(record), { tag: 3, s, i: s + 2 * k })));
    for (const bad of [0, -1, 1.5, Number.NaN, '1m']) {
      const other = await fx.register({ job: `bad-${String(bad)}`, subpartitions: 1 });
      assertCode(await rejection(fx.env.createResultPartitionWriter({ descriptor: other, memoryBytes: bad as number })), 'SHF_ERR_INVALID_ARGUMENT');
      assertCode(await rejection(fx.env.createInputGate({ jobId: descriptor.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 1 }, memoryBytes: bad as number })), 'SHF_ERR_INVALID_ARGUMENT');
    }
  });

  it('keeps two oversized records back to back and the regions after them in order, within the budget after each ready()', async () => {
    const producerMemoryBytes = 1024 * 1024;
    await using fx = await shuffleFixture({ producerMemoryBytes });
    const descriptor = await fx.register({ job: 'oversized-twice', subpartitions: 2 });
    const writer = await fx.env.createResultPartitionWriter({ descriptor });
    const limit = writer.metrics.memoryLimitBytes;
    const sizes = new Map<number, number>();
    const emit = async (s: number, i: number, bytes: number): Promise<void> => {
      sizes.set(i, bytes);
      if (!writer.emitRecord(taggedRecord(1, s, i, bytes), s)) {
        await writer.ready();
        assert.ok(writer.metrics.bufferedBytes <= limit, `after ready() at record ${i} (${bytes} bytes) the writer holds ${writer.metrics.bufferedBytes} bytes, budget ${limit}`);
      }
    };
    let i = 0;
    for (; i < 1000; i++) await emit(i % 2, i, 300);
    await emit(0, i++, 3 * 1024 * 1024);
    await emit(0, i++, 5 * 1024 * 1024);
    await emit(1, i++, 3 * 1024 * 1024);
    for (const end = i + 5000; i < end; ) await emit(i % 2, i, 300), i++;
    await writer.finish();
    await writer.close();
    const read = await readPartition(fx.env, descriptor);
    for (let s = 0; s < 2; s++) {
      const got = read[s]!.map((r) => [tagOf(r).i, r.length]);
      const want = [...sizes].filter(([k]) => (k === 1000 || k === 1001 ? 0 : k === 1002 ? 1 : k % 2) === s).map(([k]) => [k, taggedRecord(1, s, k, sizes.get(k)!).length]);
      assert.deepEqual(got, want, `subpartition ${s}: every record, in order, at its length`);
    }
  });

  it('stores raw blocks in a local directory by default and compresses them with LZ4 when asked', async () => {
    const sizes: Record<string, number> = {};
    for (const compression of ['lz4', 'default'] as const) {
      await using fx = await shuffleFixture(compression === 'default' ? {} : { compression });
      const descriptor = await fx.register({ job: `compress-${compression}`, subpartitions: 2 });
      await writePartition(fx.env, descriptor, 2000, 3, 200);
      const files = await objectFiles(fx.dir!);
      assert.equal(files.length, 1);
      sizes[compression] = (await stat(files[0]!)).size;
      assert.equal((await readPartition(fx.env, descriptor)).flat().length, 4000);
    }
    const framed = 4000 * 204;
    assert.ok(sizes['default']! > framed, `object written with the default options (${sizes['default']}) holds at least the framed bytes ${framed}`);
    assert.ok(sizes['lz4']! < framed / 2, `LZ4 object ${sizes['lz4']} should be well under ${framed}`);
  });
});

describe('remote writer: commit protocol', () => {
  it('lets the first attempt to commit win; the later one gets SHF_ERR_COMMIT_CONFLICT and its object is deleted', async () => {
    await using fx = await shuffleFixture();
    const first = await fx.register({ job: 'race', subpartitions: 2 });
    // two writers of the one registered attempt (a zombie producer and its retry): the first commit wins; a
    // writer of an attempt that is not the registered one may never commit (see the conformance suite)
    const second = first;
    const a = await fx.env.createResultPartitionWriter({ descriptor: first });
    const b = await fx.env.createResultPartitionWriter({ descriptor: second });
    for (let i = 0; i < 500; i++) {
      a.emitRecord(taggedRecord(100, i % 2, i), i % 2);
      b.emitRecord(taggedRecord(200, i % 2, i), i % 2);
    }
    assert.equal((await objectFiles(fx.dir!)).length, 2);
    await b.finish();
    const error = await rejection(a.finish());
    assertCode(error, 'SHF_ERR_COMMIT_CONFLICT', 'edge#0');
    await a.close();
    await b.close();
    assert.equal((await objectFiles(fx.dir!)).length, 1, "the loser's object is deleted");
    const tags = new Set((await readPartition(fx.env, first)).flat().map((r) => tagOf(r).tag));
    assert.deepEqual(tags, new Set([200]), "readers see only the winner's data, whichever attempt their descriptor names");
  });

  it('leaves nothing visible when the producer fails, tells consumers why, and a sweep deletes its object', async () => {
    await using fx = await shuffleFixture();
    const descriptor = await fx.register({ job: 'fails', subpartitions: 1 });
    const writer = await fx.env.createResultPartitionWriter({ descriptor });
    for (let i = 0; i < 100; i++) writer.emitRecord(taggedRecord(1, 0, i), 0);
    writer.fail(new Error('mapper crashed on line 42'));
    await writer.close();
    assert.deepEqual(await fx.master.listPartitions(descriptor.jobId), []);
    const error = await rejection(readPartition(fx.env, descriptor));
    assertCode(error, 'SHF_ERR_PRODUCER_FAILED', 'edge#0');
    assert.match(String((error as Error).cause), /mapper crashed on line 42/);
    await fx.master.sweep();
    assert.deepEqual(await objectFiles(fx.dir!), []);
  });

  it('refuses the commit of a partition released while it was written, and deletes the object', async () => {
    await using fx = await shuffleFixture();
    const descriptor = await fx.register({ job: 'released', subpartitions: 1 });
    const writer = await fx.env.createResultPartitionWriter({ descriptor });
    writer.emitRecord(taggedRecord(1, 0, 0), 0);
    await fx.master.releasePartitionExternally(descriptor);
    assertCode(await rejection(writer.finish()), 'SHF_ERR_PARTITION_NOT_FOUND', 'edge#0');
    await writer.close();
    await fx.master.sweep();
    assert.deepEqual(await objectFiles(fx.dir!), []);
    assertCode(await rejection(readPartition(fx.env, descriptor)), 'SHF_ERR_PARTITION_NOT_FOUND', 'edge#0');
  });

  it('commits nothing when a writer is closed before finish()', async () => {
    await using fx = await shuffleFixture();
    const descriptor = await fx.register({ job: 'closed', subpartitions: 1 });
    const writer = await fx.env.createResultPartitionWriter({ descriptor });
    writer.emitRecord(taggedRecord(1, 0, 0), 0);
    await writer.close();
    assert.deepEqual(await fx.master.listPartitions(descriptor.jobId), []);
    assertCode(await rejection(readPartition(fx.env, descriptor)), 'SHF_ERR_PRODUCER_FAILED', 'edge#0');
    assert.deepEqual(await objectFiles(fx.dir!), []);
  });

  it('never deletes the object of a live writer, even when sweeps run long after its lease would have run out', async () => {
    await using fx = await shuffleFixture({ attemptLeaseMs: 200, producerMemoryBytes: 256 * 1024 });
    const descriptor = await fx.register({ job: 'live', subpartitions: 1 });
    const writer = await fx.env.createResultPartitionWriter({ descriptor });
    for (let i = 0; i < 5000; i++) if (!writer.emitRecord(taggedRecord(9, 0, i, 200), 0)) await writer.ready();
    for (let round = 0; round < 4; round++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.deepEqual(await fx.master.sweep(), { collectedAttempts: 0, deletedObjects: 0, failedDeletions: 0 });
    }
    await writer.finish();
    await writer.close();
    assert.equal((await readPartition(fx.env, descriptor)).flat().length, 5000);
  });
});

describe('remote master', () => {
  it('lets a new master on the same stores list every committed partition with its sizes (failover)', async () => {
    await using fx = await shuffleFixture();
    const a = await fx.register({ job: 'failover', index: 0, subpartitions: 3 });
    const b = await fx.register({ job: 'failover', index: 1, subpartitions: 3 });
    await fx.register({ job: 'failover', index: 2, subpartitions: 3 }); // registered, never produced
    await writePartition(fx.env, a, 10, 1, 100);
    await writePartition(fx.env, b, 20, 2, 50);
    const before = await fx.master.listPartitions(a.jobId);
    const successor = createRemoteShuffleServiceFactory(fx.factory.reference.options).createShuffleMaster();
    await successor.start();
    try {
      const after = await successor.listPartitions(a.jobId);
      assert.deepEqual(after, before);
      assert.deepEqual(after.map((p) => p.descriptor.partition.partitionId), ['edge#0', 'edge#1']);
      assert.deepEqual(after[0]!.subpartitionBytes, [1040, 1040, 1040]);
      assert.deepEqual(after[1]!.subpartitionBytes, [20 * 54, 20 * 54, 20 * 54]);
      assert.equal(after[1]!.totalBytes, 3 * 20 * 54);
    } finally {
      await successor.close();
    }
  });

  it('releases a job\'s BLOCKING partitions on unregisterJob and keeps BLOCKING_PERSISTENT ones', async () => {
    await using fx = await shuffleFixture();
    const blocking = await fx.register({ job: 'unregister', index: 0, subpartitions: 1 });
    const persistent = await fx.register({ job: 'unregister', index: 1, subpartitions: 1, type: 'BLOCKING_PERSISTENT' });
    await writePartition(fx.env, blocking, 5);
    await writePartition(fx.env, persistent, 5);
    await fx.master.unregisterJob(blocking.jobId);
    assert.deepEqual((await fx.master.listPartitions(blocking.jobId)).map((p) => p.descriptor.partition.partitionId), ['edge#1']);
    assert.equal((await objectFiles(fx.dir!)).length, 1);
    assertCode(await rejection(readPartition(fx.env, blocking)), 'SHF_ERR_PARTITION_NOT_FOUND', 'edge#0');
    assert.equal((await readPartition(fx.env, persistent)).flat().length, 5);
  });

  it('refuses pipelined partition types, which it cannot store', async () => {
    await using fx = await shuffleFixture();
    const error = await rejection(fx.register({ job: 'pipelined', type: 'PIPELINED' }));
    assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_ARGUMENT'));
    assert.match(error.message, /partitionType/);
  });
});
