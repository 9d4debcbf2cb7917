// The Redis job event log through Sentinel: a primary SIGKILLed mid-stream loses no append that resolved,
// and an append no replica acknowledges fails loudly.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isEngineError } from '@weft/engine';
import { RedisJobEventLog } from '@weft/job-store';
import { isShuffleError } from '@weft/shuffle-api';
import { type RedisSentinelGroup, startRedisSentinelGroup } from '@weft/testkit';

let group: RedisSentinelGroup;

describe('RedisJobEventLog through Redis Sentinel', () => {
  before(async () => {
    group = await startRedisSentinelGroup({ replicas: 1, sentinels: 3 });
  });
  after(async () => {
    await group?.close();
  });

  it('keeps every append that resolved when the primary is SIGKILLed mid-stream and a replica takes over', async () => {
    await using store = await RedisJobEventLog.connect({ url: group.url }, { retryTimeoutMs: 60_000, keyPrefix: 'sentinel-failover:' });
    const log = await store.open({ jobId: 'failover', owner: 'test' });
    const resolved: number[] = [];
    let stop = false;
    let failure: unknown;
    const appender = (async () => {
      try {
        for (let i = 0; !stop; i++) resolved.push((await log.append({ type: 'task-finished', data: { i } })).seq);
      } catch (error) {
        failure = error;
      }
    })();
    const until = async (count: number): Promise<void> => {
      while (resolved.length < count && failure === undefined) await new Promise((r) => setTimeout(r, 10));
    };
    await until(50);
    const old = await group.primary();
    await old.kill();
    const before = resolved.length;
    const promoted = await group.waitForFailover(old);
    assert.notEqual(promoted, old);
    await old.start(); // the Sentinels make it a replica of the new primary
    await group.waitForReplicas(1);
    await until(before + 50);
    stop = true;
    await appender;
    assert.equal(failure, undefined, `an append failed across the failover: ${String(failure)}`);

    await using reader = await RedisJobEventLog.connect({ url: group.url }, { keyPrefix: 'sentinel-failover:' });
    const seqs = (await reader.readRun('failover')).map((e) => e.seq);
    const missing = resolved.filter((seq) => !seqs.includes(seq));
    assert.deepEqual(missing, [], 'appends that resolved are missing after the failover');
    assert.deepEqual(seqs, seqs.map((_, i) => seqs[0]! + i), 'the log has a gap');
    assert.ok(resolved.length >= before + 50);
  });

  it('fails an append no replica acknowledges with WEFT_ERR_EVENT_LOG caused by SHF_ERR_NOT_REPLICATED, and appends again once a replica is back', async () => {
    const primary = await group.primary();
    const replica = group.nodes.find((n) => n !== primary && n.running)!;
    await using store = await RedisJobEventLog.connect({ url: `${group.url}?replicaTimeoutMs=100&replicaTries=3` }, { retryTimeoutMs: 5_000, keyPrefix: 'sentinel-unacked:' });
    const log = await store.open({ jobId: 'unacked', owner: 'test' });
    await log.append({ type: 'job-submitted', data: {} });
    await replica.kill();
    try {
      await assert.rejects(log.append({ type: 'task-finished', data: {} }), (error: unknown) => {
        assert.ok(isEngineError(error) && error.code === 'WEFT_ERR_EVENT_LOG', String(error));
        const cause = (error as Error).cause;
        assert.ok(isShuffleError(cause, 'SHF_ERR_NOT_REPLICATED'), String(cause));
        assert.equal(cause.context['replicas'], 0);
        assert.match((error as Error).message, /0 of the 1 replicas/);
        return true;
      });
    } finally {
      await replica.start();
    }
    await group.waitForReplicas(1);
    // a replica that is online again may still be syncing: its first WAITs can time out, so the open is
    // retried (for up to 10 s) while it is refused as not replicated — anything else fails at once
    const deadline = Date.now() + 10_000;
    let again: Awaited<ReturnType<typeof store.open>>;
    for (;;) {
      try {
        again = await store.open({ jobId: 'unacked', owner: 'test' });
        break;
      } catch (error) {
        if (!isShuffleError((error as Error).cause, 'SHF_ERR_NOT_REPLICATED') || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    const appended = await again.append({ type: 'task-finished', data: { again: true } });
    assert.equal(appended.epoch, again.epoch);
  });
});
