// ServerExclusions: an excluded server comes back only when it answers /healthz healthy under its own id
// AND is registered. A scripted directory (the registry's answer), a real HTTP server probed by the real
// client.
import { strict as assert } from 'node:assert';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { ShuffleServerClient, resolveShuffleServerClientOptions } from '@weft/shuffle-remote/client';
import { ServerExclusions } from '../src/coordinator/server-exclusions.js';
import type { ServerRecord } from '../src/coordinator/server-record.js';
import { eventually } from './helpers/server-objects.js';

/** An HTTP server answering GET /healthz as `answer()` says, counting the probes. */
async function healthServer(answer: () => { status: number; serverId: string }): Promise<{ url: string; probes: () => number } & AsyncDisposable> {
  let probes = 0;
  const server: Server = createServer((req, res) => {
    if (req.url === '/healthz') probes++;
    const { status, serverId } = answer();
    const body = JSON.stringify(status === 200 ? { status: 'ok', serverId, activeStreams: 0, partitions: 0 } : { code: 'SHF_ERR_STORAGE_UNAVAILABLE', wire: 11, message: 'shutting down' });
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    probes: () => probes,
    [Symbol.asyncDispose]: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function record(serverId: string, url: string): ServerRecord {
  return { serverId, url, capacityBytes: 10 ** 12, diskUsedBytes: 0, activeStreams: 0, maxConcurrentStreams: 512, partitions: 0, tiered: false, startedAtMs: 0, heartbeatAtMs: 0 };
}

describe('server exclusions', () => {
  it('takes a server back only once it is registered and answers healthy under its own id', async () => {
    let answer = { status: 503, serverId: 's1' };
    await using http = await healthServer(() => answer);
    const registered = new Map<string, ServerRecord>();
    let lookups = 0;
    const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [http.url] }));
    const exclusions = new ServerExclusions({
      directory: { get: async (id) => (lookups++, registered.get(id)) },
      probe: (url) => client.health(url),
      probeInitialDelayMs: 5,
      probeMaxDelayMs: 20,
    });
    try {
      assert.equal(exclusions.exclude({ serverId: 's1', url: http.url }, 'refused'), true);
      assert.equal(exclusions.exclude({ serverId: 's1', url: http.url }, 'refused again'), false, 'excluded once');
      assert.ok(exclusions.isExcluded('s1'));
      // registered, but shutting down (503): probed, stays out
      registered.set('s1', record('s1', http.url));
      await eventually(() => http.probes() >= 2, 'two probes answered 503');
      assert.ok(exclusions.isExcluded('s1'));
      // healthy, but another server answers at that address: stays out
      answer = { status: 200, serverId: 'someone-else' };
      const seen = http.probes();
      await eventually(() => http.probes() >= seen + 2, 'two probes answered by another server');
      assert.ok(exclusions.isExcluded('s1'));
      // healthy under its id, but not registered: not even probed, stays out
      // (probe rounds run one after another: a lookup after the change means the round before it is over)
      registered.delete('s1');
      const before = lookups;
      await eventually(() => lookups >= before + 1, 'a lookup after the server left the registry');
      answer = { status: 200, serverId: 's1' };
      const after = lookups;
      await eventually(() => lookups >= after + 2, 'two rounds while healthy and unregistered');
      assert.ok(exclusions.isExcluded('s1'), 'a server that is not registered is not taken back');
      // registered and healthy: back
      registered.set('s1', record('s1', http.url));
      await eventually(() => !exclusions.isExcluded('s1'), 'the server to be taken back');
      assert.deepEqual(exclusions.list(), []);
    } finally {
      exclusions.close();
      await client.close();
    }
  });

  it('stops probing when closed', async () => {
    await using http = await healthServer(() => ({ status: 503, serverId: 's1' }));
    const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [http.url] }));
    const exclusions = new ServerExclusions({ directory: { get: async () => record('s1', http.url) }, probe: (url) => client.health(url), probeInitialDelayMs: 5, probeMaxDelayMs: 5 });
    exclusions.exclude({ serverId: 's1', url: http.url }, 'refused');
    await eventually(() => http.probes() >= 1, 'a probe');
    exclusions.close();
    const probes = http.probes();
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.ok(http.probes() <= probes + 1, 'at most the probe in flight completes after close');
    assert.equal(exclusions.isExcluded('s1'), false);
    assert.equal(exclusions.exclude({ serverId: 's2', url: http.url }, 'after close'), false, 'a closed set excludes nothing');
    await client.close();
  });
  it('probeNow asks every excluded server at once: a healthy one is back without waiting for its background probe, a down one stays out', async () => {
    await using up = await healthServer(() => ({ status: 200, serverId: 'up' }));
    await using down = await healthServer(() => ({ status: 503, serverId: 'down' }));
    const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [up.url] }));
    const records = new Map([['up', record('up', up.url)], ['down', record('down', down.url)]]);
    // background probes an hour away: only probeNow can take a server back within the test
    const exclusions = new ServerExclusions({ directory: { get: async (id) => records.get(id) }, probe: (url) => client.health(url), probeInitialDelayMs: 3_600_000, probeMaxDelayMs: 3_600_000 });
    try {
      exclusions.exclude({ serverId: 'up', url: up.url }, 'an old report');
      exclusions.exclude({ serverId: 'down', url: down.url }, 'refused');
      await exclusions.probeNow();
      assert.equal(exclusions.isExcluded('up'), false, 'healthy and registered: taken back at once');
      assert.equal(exclusions.isExcluded('down'), true, 'answering 503: still out');
      assert.deepEqual([up.probes(), down.probes()], [1, 1], 'each probed once');
    } finally {
      exclusions.close();
      await client.close();
    }
  });
});
