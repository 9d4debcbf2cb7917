// `weft ui --meta redis://… --cluster redis://…` on a real redis-server: the jobs of a Redis event log, the
// executors and shuffle servers registered in Redis (filled through the registries' own APIs).
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { RedisExecutorRegistry } from '@weft/cluster';
import { RedisJobEventLog } from '@weft/job-store';
import { RedisServerRegistry } from '@weft/shuffle-remote/client';
import { createTempDir, type RedisServer, startRedis } from '@weft/testkit';
import type { ClusterResponse, JobListResponse } from '@weft/ui';
import { startWeft } from './helpers/weft-process.js';

function getJson<T>(url: string): Promise<T> {
  return new Promise((resolve, reject) => {
    request(url, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (t: string) => (body += t));
      res.on('end', () => resolve(JSON.parse(body) as T));
    })
      .on('error', reject)
      .end();
  });
}

describe('weft ui on Redis, in cluster mode', () => {
  let redis: RedisServer;
  before(async () => {
    redis = await startRedis({ persistent: false });
    await using store = await RedisJobEventLog.connect({ url: redis.url });
    const log = await store.open({ jobId: 'wc-9', owner: 'host:1' });
    await log.append({ type: 'job-submitted', data: { name: 'wordcount', tasksTotal: 3 } });
    await log.append({ type: 'job-finished', data: {} });
  });
  after(() => redis.close());

  it('lists the jobs of the Redis log and the live executors and shuffle servers with their slots and disk', async () => {
    const registry = new RedisExecutorRegistry({ url: redis.url });
    const servers = new RedisServerRegistry({ url: redis.url });
    await registry.start();
    await servers.start();
    try {
      const now = Date.now();
      await registry.heartbeat({ id: 'te-1', advertisedUrl: 'http://127.0.0.2:7001', host: 'h1', slots: 4, freeSlots: 1, version: '0.1.0', pid: 1, incarnation: 'i1', startedAtMs: now, draining: false }, 60_000);
      await servers.heartbeat({ serverId: 'ss-1', url: 'http://127.0.0.3:7002', capacityBytes: 5_000_000, diskUsedBytes: 10, activeStreams: 0, maxConcurrentStreams: 64, partitions: 0, tiered: false, startedAtMs: now, heartbeatAtMs: now, pid: 2, hostname: 'h2', dir: '/tmp/x' }, 60_000);
      await using dir = await createTempDir('weft-ui-cluster-');
      await using ui = startWeft(['ui', '--meta', redis.url, '--cluster', redis.url, '--port', '0'], { cwd: dir.path });
      const url = (await ui.waitFor(/^ui on (http:\/\/\S+)$/m))[1] as string;
      const jobs = await getJson<JobListResponse>(`${url}/api/jobs`);
      assert.deepEqual(jobs.jobs.map((j) => [j.jobId, j.name, j.status]), [['wc-9', 'wordcount', 'succeeded']]);
      const cluster = await getJson<ClusterResponse>(`${url}/api/cluster`);
      assert.equal(cluster.available, true);
      assert.deepEqual(cluster.executors, [{ id: 'te-1', address: 'http://127.0.0.2:7001', slots: 4, freeSlots: 1, load: 0.75, version: '0.1.0', state: 'live' }]);
      assert.deepEqual(cluster.shuffleServers, [{ id: 'ss-1', url: 'http://127.0.0.3:7002', freeDiskBytes: 5_000_000, state: 'live' }]);
      ui.child.kill('SIGINT');
      assert.equal(await ui.exited, 0, ui.stderr());
    } finally {
      await registry.close();
      await servers.close();
    }
  });
});
