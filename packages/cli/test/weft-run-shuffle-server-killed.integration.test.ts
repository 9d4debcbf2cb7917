// `weft run --shuffle-servers` with one copy of each partition (`--shuffle-replicas 1`): one of three real
// `weft shuffle-server` processes SIGKILLed once the job's first stage committed its partitions, while the
// join reads them. The job must succeed within a restart budget of 2, its output equal to a naive
// computation of the same revenue: the shuffle master names every partition the dead server held
// (JobShuffleContext.partitionsLost) while it takes the first reader's failure report, so one failover
// (two at most) re-runs all their producers — not one failover per partition the server held, as each
// restarted reader found the next one.
import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ShuffleServerPool, type TempDir, createTempDir, startShuffleServerPool } from '@weft/testkit';
import { type Running, start } from './helpers/stale-master.js';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const SECRET = 'shuffle-server-killed-secret-0123456789';
const PARALLELISM = 4;
const CUSTOMERS = 12_000;
const ORDERS = 120_000;
/** examples/tpch-revenue.ts names nation keys so. */
const NATIONS = ['ALGERIA', 'ARGENTINA', 'BRAZIL', 'CANADA', 'EGYPT', 'ETHIOPIA', 'FRANCE', 'GERMANY', 'INDIA', 'INDONESIA', 'IRAN', 'IRAQ', 'JAPAN', 'JORDAN', 'KENYA', 'MOROCCO', 'MOZAMBIQUE', 'PERU', 'CHINA', 'ROMANIA', 'SAUDI ARABIA', 'VIETNAM', 'RUSSIA', 'UNITED KINGDOM', 'UNITED STATES'];
const SEGMENTS = ['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'];

/** `weft <args>` from the repository, its job master the spawned process (helpers/stale-master.ts's `start`). */
const weft = (args: readonly string[]): Running => start(args, repo, { ...process.env, WEFT_SHUFFLE_SECRET: SECRET });

/** Committed partitions on a server (one commit record each, `<dir>/commits/<job>/<partition>.json`). */
async function commits(dir: string): Promise<number> {
  const entries = await readdir(join(dir, 'commits'), { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile() && e.name.endsWith('.json')).length;
}

/** A small deterministic generator (xorshift), independent of the example's. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** Writes dbgen-style customer.tbl and orders.tbl; returns each (nation, segment)'s revenue line, computed naively. */
async function writeTables(dir: string): Promise<string[]> {
  const next = random(20_240_601);
  const customers: { nation: number; segment: string }[] = [];
  const customerLines: string[] = [];
  for (let k = 1; k <= CUSTOMERS; k++) {
    const c = { nation: Math.floor(next() * NATIONS.length), segment: SEGMENTS[Math.floor(next() * SEGMENTS.length)]! };
    customers.push(c);
    customerLines.push(`${k}|Customer#${k}|${c.nation}|${c.segment}|`);
  }
  const revenue = new Map<string, { cents: number; count: number }>();
  const orderLines: string[] = [];
  for (let k = 1; k <= ORDERS; k++) {
    const custkey = 1 + Math.floor(next() * CUSTOMERS);
    const cents = 90_000 + Math.floor(next() * 50_000_000);
    orderLines.push(`${k}|${custkey}|${(cents / 100).toFixed(2)}|1995-01-01|`);
    const c = customers[custkey - 1]!;
    const key = `${NATIONS[c.nation]}\t${c.segment}`;
    const sum = revenue.get(key) ?? { cents: 0, count: 0 };
    revenue.set(key, { cents: sum.cents + cents, count: sum.count + 1 });
  }
  await writeFile(join(dir, 'customer.tbl'), `${customerLines.join('\n')}\n`);
  await writeFile(join(dir, 'orders.tbl'), `${orderLines.join('\n')}\n`);
  return [...revenue].map(([key, { cents, count }]) => `${key}\t${(cents / 100).toFixed(2)}\t${count}`).sort();
}

describe('weft run --shuffle-servers, one server SIGKILLed mid-job (--shuffle-replicas 1)', () => {
  let pool: ShuffleServerPool;
  let dir: TempDir;
  let expected: string[];
  before(async () => {
    // default-like heartbeats (gone after 10 s): the job must find the death by itself, not by a registry TTL
    [pool, dir] = await Promise.all([startShuffleServerPool({ count: 3, secret: SECRET, heartbeatMs: 2_000 }), createTempDir('weft-run-server-killed-')]);
    expected = await writeTables(dir.path);
  });
  after(async () => {
    await Promise.allSettled([pool?.close(), dir?.remove()]);
  });

  it('succeeds with at most two failovers when the server holding a third of the first stage is killed as the join reads it', { timeout: 120_000 }, async () => {
    const output = join(dir.path, 'revenue.tsv');
    const job = weft([
      'run', 'examples/tpch-revenue.ts', '--parallelism', String(PARALLELISM), '--shuffle-servers', pool.redisUrl, '--shuffle-replicas', '1',
      '--restart-strategy', 'fixed-delay', '--restart-attempts', '2', '--restart-delay', '200', '--json', '--', '--input', dir.path, '--output', output,
    ]);
    // both sources (customers, orders) committed one partition per subtask: kill the server holding the most of them
    let counts: number[] = [];
    for (;;) {
      counts = await Promise.all(pool.servers.map((s) => commits(s.dir)));
      if (counts.reduce((a, b) => a + b, 0) >= 2 * PARALLELISM || job.child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const running = job.child.exitCode === null;
    const victim = counts.indexOf(Math.max(...counts));
    await pool.servers[victim]!.kill();
    const run = await job.done;
    assert.ok(running, 'the server died while the job ran');
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as { restarts: number; failovers: { failedTask?: string; lostPartitions: string[]; tasksToRestart: string[] }[] };
    const described = JSON.stringify(summary.failovers.map((f) => ({ failed: f.failedTask, lost: f.lostPartitions, restarted: f.tasksToRestart.length })));
    assert.ok(summary.restarts >= 1, `the killed server's partitions were read after it died (it held ${counts[victim]}): ${described}`);
    assert.ok(summary.restarts <= 2, `one dead server costs at most two failovers: ${described}`);
    assert.ok(summary.failovers[0]!.lostPartitions.length >= 2, `the first failover names every partition the server held (${counts[victim]}): ${described}`);
    const got = (await readFile(output, 'utf8')).split('\n').filter((l) => l !== '').sort();
    assert.deepEqual(got, expected, 'the revenue of each nation and segment, as computed naively');
  });
});
