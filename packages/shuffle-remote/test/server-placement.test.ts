import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { isShuffleError } from '@weft/shuffle-api';
import { rejectionOf } from '@weft/shuffle-api/testing';
import type { LiveServer, ServerDirectory } from '../src/coordinator/redis-server-registry.js';
import { ServerPlacement, chooseServers } from '../src/coordinator/server-placement.js';

function live(serverId: string, expiresInMs: number, extra: Partial<LiveServer> = {}): LiveServer {
  return {
    serverId,
    url: `http://${serverId}:7070`,
    capacityBytes: 10 ** 12,
    diskUsedBytes: 0,
    activeStreams: 0,
    maxConcurrentStreams: 512,
    partitions: 0,
    tiered: false,
    startedAtMs: 0,
    heartbeatAtMs: 0,
    expiresInMs,
    ...extra,
  };
}

/** A registry whose answers the test scripts, counting reads; and a clock the test moves. */
function fixture(lists: LiveServer[][]): { directory: ServerDirectory; reads: () => number; clock: { now(): number; set(ms: number): void } } {
  let reads = 0;
  let now = 0;
  return {
    directory: {
      listLive: async () => lists[Math.min(reads++, lists.length - 1)]!,
      get: async () => undefined,
    },
    reads: () => reads,
    clock: { now: () => now, set: (ms) => void (now = ms) },
  };
}

async function placeMany(placement: ServerPlacement, n: number): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const { serverId } = await placement.place();
    counts.set(serverId, (counts.get(serverId) ?? 0) + 1);
  }
  return counts;
}

describe('server placement', () => {
  it('gives no new partition to a server whose heartbeat expired while the list is cached (default refresh interval)', async () => {
    const f = fixture([[live('fading', 500), live('steady', 10_000)]]);
    const placement = new ServerPlacement(f.directory, { clock: f.clock }); // refreshIntervalMs: the default, 1 s
    const before = await placeMany(placement, 10);
    assert.deepEqual([before.get('fading'), before.get('steady')], [5, 5], 'both live servers share the load');
    f.clock.set(600); // fading's record ran out 100 ms ago; the list read at 0 is still fresh enough to reuse
    const after = await placeMany(placement, 10);
    assert.equal(f.reads(), 1, 'the cached list is reused: this is the lag being tested');
    assert.deepEqual([after.get('fading'), after.get('steady')], [undefined, 10]);
  });

  it('reads the list again when every cached server has expired, and fails retryably when none is live', async () => {
    const f = fixture([[live('old', 100)], [live('new', 5_000)], []]);
    const placement = new ServerPlacement(f.directory, { clock: f.clock });
    assert.equal((await placement.place()).serverId, 'old');
    f.clock.set(200);
    assert.equal((await placement.place()).serverId, 'new', 'expired cache: read again at once, not after the refresh interval');
    assert.equal(f.reads(), 2);
    f.clock.set(5_300);
    const none = await rejectionOf(placement.place());
    assert.ok(isShuffleError(none, 'SHF_ERR_STORAGE_UNAVAILABLE') && none.retryable, String(none));
    assert.match(none.message, /no live shuffle server is registered/);
  });

  it('measures expiry from the start of the read: a slow read does not stretch a server\'s life', async () => {
    let release: (list: LiveServer[]) => void = () => undefined;
    let now = 0;
    const placement = new ServerPlacement(
      { listLive: () => new Promise<LiveServer[]>((resolve) => (release = resolve)), get: async () => undefined },
      { clock: { now: () => now } },
    );
    const first = placement.place();
    now = 400; // the answer arrives 400 ms after the read began, saying the record had 300 ms left
    release([live('brief', 300), live('long', 60_000)]);
    assert.equal((await first).serverId, 'long', 'brief expired at 300, before the answer arrived');
  });

  it('skips draining servers, and says so when all are draining', async () => {
    const f = fixture([[live('leaving', 10_000, { draining: true }), live('staying', 10_000)]]);
    const placement = new ServerPlacement(f.directory, { clock: f.clock });
    assert.deepEqual([...(await placeMany(placement, 4)).keys()], ['staying']);
    const g = fixture([[live('leaving', 10_000, { draining: true })]]);
    const error = await rejectionOf(new ServerPlacement(g.directory, { clock: g.clock }).place());
    assert.match(String(error), /shutting down/);
  });

  it('never places on an excluded server, and names the excluded servers when every live one is', async () => {
    const f = fixture([[live('dead', 60_000), live('alive', 60_000)]]);
    const excluded = new Set(['dead']);
    const placement = new ServerPlacement(f.directory, { clock: f.clock, isExcluded: (id) => excluded.has(id), registryName: 'redis://10.0.0.5:6379/0' });
    assert.deepEqual([...(await placeMany(placement, 6))], [['alive', 6]]);
    excluded.add('alive');
    const error = await rejectionOf(placement.place());
    assert.ok(isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE'), String(error));
    assert.match(error.message, /no reachable shuffle server in redis:\/\/10\.0\.0\.5:6379\/0: all 2 registered are excluded/);
    assert.match(error.message, /http:\/\/dead:7070/);
    excluded.clear();
    assert.ok(((await placeMany(placement, 2)).get('dead') ?? 0) > 0, 'taken back: it gets partitions again');
  });

  it('asks the excluded servers whether they are back before failing because every live one is excluded', async () => {
    const f = fixture([[live('a', 60_000), live('b', 60_000)]]);
    const excluded = new Set(['a', 'b']);
    let probes = 0;
    const placement = new ServerPlacement(f.directory, { clock: f.clock, isExcluded: (id) => excluded.has(id), probeExcluded: async () => void (probes++, excluded.delete('b')) });
    assert.equal((await placement.place()).serverId, 'b', 'b answered healthy when asked: placed there');
    assert.equal(probes, 1);
    assert.equal((await placement.place()).serverId, 'b', 'no probe while one is eligible');
    assert.equal(probes, 1);
    excluded.add('b');
    const noneBack = new ServerPlacement(f.directory, { clock: f.clock, isExcluded: (id) => excluded.has(id), probeExcluded: async () => void probes++ });
    const error = await rejectionOf(noneBack.place());
    assert.ok(isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE') && /all 2 registered are excluded/.test(error.message), String(error));
    assert.equal(probes, 2, 'asked once, then failed');
  });

  it('asks the excluded servers whether they are back before placing fewer copies than asked', async () => {
    const f = fixture([[live('a', 60_000), live('b', 60_000, { url: 'http://other-host:7070' })]]);
    const excluded = new Set(['b']);
    let probes = 0;
    const placement = new ServerPlacement(f.directory, { clock: f.clock, isExcluded: (id) => excluded.has(id), probeExcluded: async () => void (probes++, excluded.delete('b')) });
    const placed = await placement.placeSeveral({ count: 2, distinctHosts: true });
    assert.deepEqual(placed.servers.map((s) => s.serverId).sort(), ['a', 'b'], 'b answered when asked: two copies');
    assert.equal(probes, 1);
  });

  it('keeps a free-disk floor of 256 MiB by default (minFreeBytes), 0 turning it off', async () => {
    const MiB = 1024 * 1024;
    const f = fixture([[live('full', 60_000, { capacityBytes: 255 * MiB }), live('roomy', 60_000, { capacityBytes: 257 * MiB })]]);
    assert.deepEqual([...(await placeMany(new ServerPlacement(f.directory, { clock: f.clock }), 4))], [['roomy', 4]]);
    const g = fixture([[live('full', 60_000, { capacityBytes: 255 * MiB })]]);
    const error = await rejectionOf(new ServerPlacement(g.directory, { clock: g.clock }).place());
    assert.match(String(error), /268435456 free bytes \(minFreeBytes\)/);
    assert.equal((await new ServerPlacement(g.directory, { clock: g.clock, minFreeBytes: 0 }).place()).serverId, 'full');
  });

  it('places replicas on hosts not used yet, the spares on other hosts again, and says when a host must be shared', async () => {
    const at = (id: string, host: string): LiveServer => live(id, 10_000, { url: `http://${host}:7070` });
    const [a1, a2, b1, c1] = [at('a1', '10.0.0.1'), at('a2', '10.0.0.1'), at('b1', '10.0.0.2'), at('c1', '10.0.0.3')];
    const two = chooseServers([a1, a2, b1, c1], { count: 2, distinctHosts: true, spares: 2 });
    assert.deepEqual(two.servers.map((s) => s.serverId), ['a1', 'b1'], 'the second copy skips the primary\'s host');
    assert.deepEqual(two.spares.map((s) => s.serverId), ['c1', 'a2'], 'spares: an unused host first');
    assert.equal(two.sameHost, false);
    const crowded = chooseServers([a1, a2], { count: 2, distinctHosts: true });
    assert.deepEqual(crowded.servers.map((s) => s.serverId), ['a1', 'a2'], 'one host only: different servers of it');
    assert.equal(crowded.sameHost, true);
    const short = chooseServers([a1], { count: 3, distinctHosts: true, spares: 2 });
    assert.deepEqual([short.servers.length, short.spares.length, short.eligible], [1, 0, 1], 'fewer servers than replicas: as many as there are');

    // through the placement: the primary is the least loaded server, each replica counts as load
    const g = fixture([[at('a1', 'h1'), { ...at('a2', 'h1'), activeStreams: 5 }, { ...at('b1', 'h2'), activeStreams: 9 }]]);
    const placement = new ServerPlacement(g.directory, { clock: g.clock });
    const placed = await placement.placeSeveral({ count: 2, distinctHosts: true, spares: 1 });
    assert.deepEqual(placed.servers.map((s) => s.serverId), ['a1', 'b1'], 'a busier server on another host beats an idle one on the same host');
    assert.deepEqual(placed.spares.map((s) => s.serverId), ['a2']);
  });
});
