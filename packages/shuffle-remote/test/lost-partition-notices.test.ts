// LostPartitionNotices, the server-pool master's side of JobShuffleContext.partitionsLost, on a cluster given
// as plain data: which of a job's partitions a dead server takes with it (no copy left in the S3 tier or on
// a live server), that a verdict other than `dead` tells nobody, that a dead server is checked once until it
// is taken back (`revive`), and that a job registered without the callback hears nothing. Expected notices
// worked out by hand from the copies listed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobId, PartitionsLostNotice } from '@weft/shuffle-api';
import type { CommittedPartition } from '../src/protocol/committed-partition.js';
import { LostPartitionNotices, type ServerVerdict } from '../src/coordinator/lost-partition-notices.js';

const copy = (partitionId: string, serverId: string, tiered = false): CommittedPartition => ({ jobId: 'j', partitionId, attempt: 0, serverId, tiered }) as unknown as CommittedPartition;

function cluster(request: { copies: CommittedPartition[][]; live: string[]; verdict: ServerVerdict }) {
  const checks: string[] = [];
  const notices: PartitionsLostNotice[] = [];
  const notices$ = new LostPartitionNotices({
    listLocations: async () => request.copies,
    liveServerIds: async () => new Set(request.live),
    check: async ({ serverId }) => {
      checks.push(serverId);
      return request.verdict;
    },
  });
  notices$.register({ jobId: 'j' as JobId, partitionsLost: (notice) => void notices.push(notice) });
  return { notices: notices$, checks, told: () => notices.map((n) => n.partitions.map((p) => p.partitionId).sort()) };
}

describe('LostPartitionNotices', () => {
  it('names the partitions whose every copy was on the dead server or another gone one, not those with a tier copy or a live replica', async () => {
    const c = cluster({
      copies: [[copy('a#0', 's1')], [copy('a#1', 's1', true)], [copy('a#2', 's1'), copy('a#2', 's2')], [copy('a#3', 's1'), copy('a#3', 's3')], [copy('a#4', 's2')]],
      // s3 is no longer registered: its copy of a#3 is gone too
      live: ['s1', 's2'],
      verdict: 'dead',
    });
    await c.notices.suspect({ serverId: 's1', url: 'http://127.0.0.11:1' });
    assert.deepEqual(c.told(), [['a#0', 'a#3']]);
  });

  it('tells nobody when the check does not find the server dead (a paused or slow one)', async () => {
    for (const verdict of ['alive', 'unknown'] as const) {
      const c = cluster({ copies: [[copy('a#0', 's1')]], live: ['s1'], verdict });
      await c.notices.suspect({ serverId: 's1', url: 'http://127.0.0.11:1' });
      assert.deepEqual(c.told(), [], verdict);
      assert.equal(c.notices.isDead('s1'), false);
    }
  });

  it('checks a dead server once, until it is taken back', async () => {
    const c = cluster({ copies: [[copy('a#0', 's1')]], live: ['s1'], verdict: 'dead' });
    await Promise.all([c.notices.suspect({ serverId: 's1', url: 'u' }), c.notices.suspect({ serverId: 's1', url: 'u' })]);
    await c.notices.suspect({ serverId: 's1', url: 'u' });
    assert.deepEqual(c.checks, ['s1'], 'one check for concurrent and later suspicions');
    assert.equal(c.told().length, 1);
    c.notices.revive('s1');
    await c.notices.suspect({ serverId: 's1', url: 'u' });
    assert.deepEqual(c.checks, ['s1', 's1'], 'taken back, it is checked again');
  });

  it('tells nothing to a job registered without the callback, or unregistered', async () => {
    const c = cluster({ copies: [[copy('a#0', 's1')]], live: ['s1'], verdict: 'dead' });
    c.notices.register({ jobId: 'j' as JobId });
    await c.notices.suspect({ serverId: 's1', url: 'u' });
    assert.deepEqual(c.told(), []);
    assert.deepEqual(c.checks, [], 'no job listens: nothing is checked');
  });
});
