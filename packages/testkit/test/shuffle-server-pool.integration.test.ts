import { strict as assert } from 'node:assert';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import { startShuffleServerPool } from '@weft/testkit';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A server's registry record, read with redis-cli (the testkit depends on no Weft package). */
function registryRecord(port: number, serverId: string): { url?: string; pid?: number; hostname?: string; dir?: string } | undefined {
  const out = spawnSync('redis-cli', ['-p', String(port), '--raw', 'GET', `weft:shuffle-server:server:${serverId}`], { encoding: 'utf8' });
  const text = out.stdout.trim();
  return text === '' ? undefined : (JSON.parse(text) as { url?: string; pid?: number; hostname?: string; dir?: string });
}

async function healthy(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })).ok;
  } catch {
    return false;
  }
}

describe('startShuffleServerPool', () => {
  it('starts real weft shuffle-server processes on their own loopback addresses, registered with pid, hostname and dir; kills, pauses and restarts them; closes everything', async () => {
    const pool = await startShuffleServerPool({ count: 2, hosts: ['127.0.0.2', '127.0.0.3'] });
    let pids: number[] = [];
    let dirs: string[] = [];
    try {
      assert.deepEqual(pool.servers.map((s) => s.url.replace(/:\d+$/, '')), ['http://127.0.0.2', 'http://127.0.0.3']);
      pids = pool.servers.map((s) => s.pid);
      dirs = pool.servers.map((s) => s.dir);
      for (const server of pool.servers) {
        const record = registryRecord(pool.redis.port, server.serverId);
        assert.equal(record?.url, server.url);
        assert.equal(record?.pid, server.pid, 'the process spawned is the server itself');
        assert.equal(record?.hostname, hostname());
        assert.equal(record?.dir, server.dir);
        assert.ok(await healthy(server.url));
      }
      const [a, b] = pool.servers as [(typeof pool.servers)[number], (typeof pool.servers)[number]];
      await a.kill();
      assert.equal(a.lastExit?.signal, 'SIGKILL');
      assert.equal(await healthy(a.url), false);
      b.pause();
      assert.equal(await healthy(b.url), false, 'a stopped server does not answer');
      b.resume();
      assert.ok(await healthy(b.url));
      const before = { serverId: a.serverId, port: a.port };
      await pool.ensureAllRunning();
      assert.deepEqual({ serverId: a.serverId, port: a.port }, before, 'same directory, same port');
      assert.notEqual(a.pid, pids[0]);
      assert.ok(await healthy(a.url));
      assert.equal(registryRecord(pool.redis.port, a.serverId)?.pid, a.pid, 'registered again with its new pid');
      pids.push(a.pid);
    } finally {
      await pool.close();
    }
    assert.ok(pids.every((pid) => !alive(pid)), 'no server process outlives the pool');
    assert.ok(dirs.every((dir) => !existsSync(dir)), 'directories removed');
    assert.equal(pool.redis.running, false);
  });
});
