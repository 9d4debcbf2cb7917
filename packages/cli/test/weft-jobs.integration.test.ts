// `weft jobs --meta redis://…` on a real redis-server filled through the @weft/job-store API.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type CliIo, runCli } from '@weft/cli';
import { RedisJobEventLog } from '@weft/job-store';
import { type RedisServer, startRedis } from '@weft/testkit';

describe('weft jobs on Redis', () => {
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis({ persistent: false });
    await using store = await RedisJobEventLog.connect({ url: redis.url });
    const log = await store.open({ jobId: 'wc-7', owner: 'host:1' });
    await log.append({ type: 'job-submitted', data: { name: 'wordcount', tasksTotal: 3 } });
    await log.append({ type: 'task-finished', data: { executionVertexId: 'read#0', attempt: 1 } });
    await log.append({ type: 'job-failed', data: { error: 'boom' } });
  });
  after(() => redis.close());

  it('lists the runs of a Redis job event log (--json and text)', async () => {
    let out = '';
    const io: CliIo = { stdout: { write: (t: string) => (out += t) }, stderr: { write: () => {} }, cwd: '/', env: {} };
    assert.equal(await runCli(['jobs', '--meta', redis.url, '--json'], io), 0);
    const { runs } = JSON.parse(out) as { runs: Record<string, unknown>[] };
    assert.deepEqual(
      runs.map((r) => [r['jobId'], r['job'], r['status'], r['tasksFinished'], r['tasksTotal'], r['epoch']]),
      [['wc-7', 'wordcount', 'failed', 1, 3, 1]],
    );
    out = '';
    assert.equal(await runCli(['jobs', '--meta', redis.url], io), 0);
    assert.match(out, /^wc-7\s+wordcount\s+failed\s+\S+\s+1\/3\s+1$/m);
  });
});
