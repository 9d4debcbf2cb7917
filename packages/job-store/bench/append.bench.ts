// Per-append latency of the job event log, awaited one at a time (as the job master appends): (a) SQLite
// (WAL, synchronous = FULL) against a raw better-sqlite3 INSERT of the same JSON, autocommit, with the same
// journal and synchronous settings, in a database file of its own in the same directory; (b) Redis against
// a raw XADD of the same fields on the same server (redis-server from @weft/testkit, appendonly with
// appendfsync always). Log and baseline run in alternating blocks so drift hits both alike.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { RedisJobEventLog, SqliteJobEventLog } from '@weft/job-store';
import { BenchReport, createTempDir, round, startRedis } from '@weft/testkit';

const SQLITE_APPENDS = Number(process.env['WEFT_BENCH_SQLITE_APPENDS'] ?? 1_000);
const REDIS_APPENDS = Number(process.env['WEFT_BENCH_REDIS_APPENDS'] ?? 4_000);
const BLOCK = 100;

const data = {
  executionVertexId: 'tokenize#3',
  attempt: 1,
  partitions: Array.from({ length: 4 }, (_, i) => ({ partitionId: `tokenize->count#3@${i}`, bytes: 1_234_567 + i })),
  metrics: { recordsIn: 125_000, recordsOut: 1_250_000, bytesOut: 9_876_543, durationMs: 1234 },
};
const json = JSON.stringify(data);

const out = new BenchReport('job-event-log-append');

function stats(samplesNs: number[]): { meanUs: number; p50Us: number; p99Us: number } {
  const sorted = [...samplesNs].sort((a, b) => a - b);
  const at = (q: number): number => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number) / 1_000;
  return { meanUs: sorted.reduce((a, b) => a + b, 0) / sorted.length / 1_000, p50Us: at(0.5), p99Us: at(0.99) };
}

async function timed(samples: number[], fn: () => unknown): Promise<void> {
  const start = process.hrtime.bigint();
  await fn();
  samples.push(Number(process.hrtime.bigint() - start));
}

/** Runs `total` of each, alternating blocks of BLOCK, after a warm-up of one block each. */
async function alternate(total: number, subject: () => unknown, baseline: () => unknown): Promise<[number[], number[]]> {
  const s: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < BLOCK; i++) {
    await subject();
    await baseline();
  }
  for (let done = 0; done < total; done += BLOCK) {
    for (let i = 0; i < BLOCK; i++) await timed(s, subject);
    for (let i = 0; i < BLOCK; i++) await timed(b, baseline);
  }
  return [s, b];
}

function record(store: string, subject: ReturnType<typeof stats>, baseline: ReturnType<typeof stats>, baselineName: string): void {
  out.report(`${store} append latency mean`, 'us', subject.meanUs, `${baselineName} mean`, baseline.meanUs);
  out.report(`${store} append latency p50`, 'us', subject.p50Us, `${baselineName} p50`, baseline.p50Us);
  out.report(`${store} append latency p99`, 'us', subject.p99Us, `${baselineName} p99`, baseline.p99Us);
  out.row(store, String(round(subject.meanUs, 1)), String(round(subject.p50Us, 1)), String(round(subject.p99Us, 1)), baselineName, String(round(baseline.meanUs, 1)), String(round(baseline.p50Us, 1)), String(round(baseline.p99Us, 1)));
}

{
  await using dir = await createTempDir('weft-bench-job-store-');
  await using store = new SqliteJobEventLog({ path: join(dir.path, 'log.db') });
  const log = await store.open({ jobId: 'bench', owner: 'bench' });
  const raw = new Database(join(dir.path, 'raw.db'));
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = FULL');
  raw.exec('CREATE TABLE events (job_id TEXT NOT NULL, seq INTEGER NOT NULL, epoch INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (job_id, seq)) WITHOUT ROWID');
  const insert = raw.prepare('INSERT INTO events (job_id, seq, epoch, event) VALUES (?, ?, 1, ?)');
  let seq = 0;
  const [s, b] = await alternate(
    SQLITE_APPENDS,
    () => log.append({ type: 'task-finished', data }),
    () => insert.run('bench', ++seq, json),
  );
  raw.close();
  record('sqlite', stats(s), stats(b), 'raw better-sqlite3 INSERT (WAL, synchronous=FULL)');
}

{
  await using redis = await startRedis();
  await using store = await RedisJobEventLog.connect({ url: redis.url });
  const log = await store.open({ jobId: 'bench', owner: 'bench' });
  const raw = new Redis(redis.url);
  let seq = 0;
  const [s, b] = await alternate(
    REDIS_APPENDS,
    () => log.append({ type: 'task-finished', data }),
    () => raw.xadd('raw:events', '*', 'v', '1', 'seq', String(++seq), 'epoch', '1', 'at', String(Date.now()), 'type', 'task-finished', 'data', json),
  );
  raw.disconnect();
  record('redis', stats(s), stats(b), 'raw XADD (appendfsync always)');
}

out.print(`job event log: per-append latency, awaited one at a time (${SQLITE_APPENDS} SQLite, ${REDIS_APPENDS} Redis appends each)`, [
  'store',
  'mean us',
  'p50 us',
  'p99 us',
  'baseline',
  'mean us',
  'p50 us',
  'p99 us',
]);
