import { strict as assert } from 'node:assert';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { type ShuffleDescriptor, isShuffleError } from '@weft/shuffle-api';
import { checkKey, encodeKeySegment, objectKey } from '@weft/shuffle-remote';
import { rejection, shuffleFixture } from './helpers/shuffle-fixture.js';

const HOSTILE = ['../../etc/passwd', 'a/b', 'a\\b', '..', 'x..y', 'nul\u0000byte', 'tab\tid', '', 'bell\u0007'];

function assertInvalidArgument(error: unknown): void {
  assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_ARGUMENT'), `expected SHF_ERR_INVALID_ARGUMENT, got ${String(error)}`);
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath ?? '', e.name));
}

describe('ids that become keys and paths', () => {
  it('refuses ids with separators, "..", control characters or nothing at all', () => {
    for (const id of HOSTILE) {
      assertInvalidArgument(rejectionSync(() => encodeKeySegment('jobId', id)));
      assertInvalidArgument(rejectionSync(() => objectKey({ jobId: 'job', partitionId: id, producerId: 'p#0@0', writeId: 'w' })));
    }
  });

  it('encodes accepted ids so no key segment can be "." or carry a separator', () => {
    assert.equal(encodeKeySegment('partitionId', 'edge#3'), 'edge%233');
    assert.equal(encodeKeySegment('jobId', '.'), '%2E');
    assert.equal(encodeKeySegment('jobId', 'job:1 ü'), 'job%3A1%20%C3%BC');
    const long = encodeKeySegment('jobId', 'x'.repeat(500));
    assert.ok(long.length <= 160 && long.includes('~'), `long ids are shortened with a hash: ${long}`);
    assert.notEqual(long, encodeKeySegment('jobId', `${'x'.repeat(499)}y`));
    assert.equal(checkKey(objectKey({ jobId: 'j', partitionId: 'e#0', producerId: 'v#0@1', writeId: 'abc-1' })), 'j/e%230/v%230%401.abc-1.wsm');
    for (const key of ['../x', 'a//b', '/abs', 'a/./b', 'a/b\u0000']) assertInvalidArgument(rejectionSync(() => checkKey(key)));
  });

  it('refuses hostile ids in descriptors and requests before anything touches the directory or the database', async () => {
    await using fx = await shuffleFixture();
    const good = await fx.register({ job: 'safe-job', subpartitions: 1 });
    const before = await filesUnder(join(fx.dir!, 'data'));
    for (const id of HOSTILE) {
      const descriptors: ShuffleDescriptor[] = [
        { ...good, jobId: id as never },
        { ...good, partition: { ...good.partition, partitionId: id as never } },
        { ...good, partition: { ...good.partition, resultId: id as never } },
        { ...good, producer: { ...good.producer, producerId: id as never } },
      ];
      for (const descriptor of descriptors) {
        assertInvalidArgument(await rejection(fx.env.createResultPartitionWriter({ descriptor })));
        assertInvalidArgument(await rejection(fx.env.createInputGate({ jobId: good.jobId, inputs: [descriptor], subpartitions: { start: 0, end: 0 } })));
        assertInvalidArgument(await rejection(fx.master.releasePartitionExternally(descriptor)));
      }
      assertInvalidArgument(await rejection(fx.master.registerJob({ jobId: id as never })));
      assertInvalidArgument(await rejection(fx.master.listPartitions(id as never)));
      assertInvalidArgument(await rejection(fx.master.unregisterJob(id as never)));
      assertInvalidArgument(
        await rejection(fx.master.registerPartitionWithProducer({ jobId: good.jobId, partition: { ...good.partition, partitionId: id as never }, producer: good.producer })),
      );
    }
    assert.deepEqual(await filesUnder(join(fx.dir!, 'data')), before, 'no file may be created for a refused id');
    const db = new Database(join(fx.dir!, 'meta.db'), { readonly: true });
    try {
      const attempts = db.prepare('SELECT count(*) AS n FROM weft_attempts').get() as { n: number };
      const partitions = db.prepare('SELECT partition_id, job_id FROM weft_partitions').all() as { partition_id: string; job_id: string }[];
      assert.equal(attempts.n, 0, 'no attempt may be recorded for a refused id');
      assert.deepEqual(partitions, [{ partition_id: 'edge#0', job_id: 'safe-job' }]);
    } finally {
      db.close();
    }
  });
});

function rejectionSync(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
