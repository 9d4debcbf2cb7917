import { strict as assert } from 'node:assert';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isShuffleError } from '@weft/shuffle-api';
import { createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
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

  it('compresses with LZ4 by default and stores raw bytes when compression is off', async () => {
    const sizes: Record<string, number> = {};
    for (const compression of ['lz4', 'none'] as const) {
      await using fx = await shuffleFixture({ compression });
      const descriptor = await fx.register({ job: `compress-${compression}`, subpartitions: 2 });
      await writePartition(fx.env, descriptor, 2000, 3, 200);
      const files = await objectFiles(fx.dir!);
      assert.equal(files.length, 1);
      sizes[compression] = (await stat(files[0]!)).size;
      assert.equal((await readPartition(fx.env, descriptor)).flat().length, 4000);
    }
    const framed = 4000 * 204;
    assert.ok(sizes['none']! > framed, `uncompressed object ${sizes['none']} holds at least the framed bytes ${framed}`);
    assert.ok(sizes['lz4']! < framed / 2, `LZ4 object ${sizes['lz4']} should be well under ${framed}`);
  });
});

describe('remote writer: commit protocol', () => {
  it('lets the first attempt to commit win; the later one gets SHF_ERR_COMMIT_CONFLICT and its object is deleted', async () => {
    await using fx = await shuffleFixture();
    const first = await fx.register({ job: 'race', subpartitions: 2 });
    const second = fx.attemptOf(first, 1);
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
      assert.equal((await fx.master.sweep()).deletedObjects, 0);
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
