import { strict as assert } from 'node:assert';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type Clock, isShuffleError } from '@weft/shuffle-api';
import { createBlobStore, createMetadataStore, objectKey, resolveRemoteShuffleOptions } from '@weft/shuffle-remote';
import { rejection, shuffleFixture, taggedRecord } from './helpers/shuffle-fixture.js';

const HOUR_MS = 3_600_000;
const LEASE_MS = 1_000;

async function objectFiles(dir: string): Promise<string[]> {
  const entries = await readdir(join(dir, 'data'), { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath ?? '', e.name));
}

/** A metadata store clock `offsetMs` away from this machine's, moved forward by hand. */
function skewedClock(offsetMs: number): Clock & { advance(ms: number): void } {
  let offset = offsetMs;
  return {
    now: () => Date.now() + offset,
    advance: (ms) => {
      offset += ms;
    },
  };
}

// Leases are renewed by the metadata store's clock (Redis: its server's; SQLite: the store's Clock), so a
// release judges them by that clock too. Here the store's clock is an hour away from the master's machine.
describe('remote master: leases judged by the metadata store clock', () => {
  it("keeps a live writer's object on release when the store's clock runs an hour behind the master's", async () => {
    const clock = skewedClock(-HOUR_MS);
    // a lease far longer than this test, far shorter than the skew
    await using fx = await shuffleFixture({ attemptLeaseMs: 60_000, sweepIntervalMs: 0 }, { clock });
    const descriptor = await fx.register({ job: 'behind', subpartitions: 1 });
    const writer = await fx.env.createResultPartitionWriter({ descriptor });
    try {
      writer.emitRecord(taggedRecord(1, 0, 0), 0);
      await fx.master.releasePartitionExternally(descriptor);
      assert.equal((await objectFiles(fx.dir!)).length, 1, 'the writer renewed its lease a moment ago (store time): its object stays');
      const error = await rejection(writer.finish());
      assert.ok(isShuffleError(error, 'SHF_ERR_PARTITION_NOT_FOUND'), String(error));
    } finally {
      await writer.close();
    }
    assert.deepEqual(await objectFiles(fx.dir!), [], 'the writer dropped its own object once refused');
  });

  it("deletes at once, on release, the object of a writer whose lease ran out by the store's clock, though that clock runs an hour ahead", async () => {
    const clock = skewedClock(HOUR_MS);
    await using fx = await shuffleFixture({ attemptLeaseMs: LEASE_MS, sweepIntervalMs: 0 }, { clock });
    const descriptor = await fx.register({ job: 'ahead', subpartitions: 1 });
    const options = resolveRemoteShuffleOptions(fx.factory.reference.options);
    const blob = createBlobStore(options.store);
    const meta = createMetadataStore(options, undefined, clock);
    try {
      await Promise.all([blob.start(), meta.start()]);
      // a producer that uploaded its object and died: its lease is never renewed
      const ids = { writeId: 'dead', jobId: descriptor.jobId, partitionId: descriptor.partition.partitionId, producerId: descriptor.producer.producerId };
      assert.equal(await meta.beginAttempt({ ...ids, objectKey: objectKey(ids) }), 'ok');
      const object = await blob.createWriter(objectKey(ids));
      await object.append([taggedRecord(1, 0, 0, 1024)]);
      await object.complete();
    } finally {
      await Promise.allSettled([blob.close(), meta.close()]);
    }
    assert.equal((await objectFiles(fx.dir!)).length, 1);
    clock.advance(LEASE_MS + 1);
    await fx.master.releasePartitionExternally(descriptor);
    assert.deepEqual(await objectFiles(fx.dir!), [], 'the release deletes it without waiting for a sweep');
  });
});
