// Write then read 1 GiB through persisted blocking partitions, against the raw storage underneath:
// (a) local directory + SQLite metadata vs raw `fs` write+read of the same bytes;
// (b) S3 (a real s3rver) + Redis (a real redis-server) vs raw PutObject/GetObject of the same bytes to the
//     same server (and vs a raw multipart upload, which is what big partitions must use);
// and the producer's peak memory (metrics.bufferedBytes and RSS) against producerMemoryBytes.
// Two data sets: text-like records (LZ4 halves them) and random records (incompressible).
// Environment: WEFT_BENCH_BYTES (default 1 GiB), WEFT_BENCH_RECORD_BYTES (default 1024), WEFT_BENCH_REPEAT
// (local runs, default 3), WEFT_BENCH_ONLY=local|s3.
import { execFileSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { crc32c } from '@node-rs/crc32';
import { compressSync, uncompressSync } from 'lz4-napi';
import {
  RecordDeframer,
  RecordFramer,
  executionAttemptId,
  executionVertexId,
  intermediateResultId,
  jobId,
  resultPartitionId,
  taskExecutorId,
} from '@weft/shuffle-api';
import { type RemoteShuffleOptions, createRemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { createTempDir, startRedis, startS3Server } from '@weft/testkit';

const TOTAL = Number(process.env['WEFT_BENCH_BYTES'] ?? 1024 ** 3);
const RECORD = Number(process.env['WEFT_BENCH_RECORD_BYTES'] ?? 1024);
const SUBPARTITIONS = 8;
/** Local runs alternate raw / LZ4 / uncompressed this many times; the best of each counts. */
const REPEAT = Number(process.env['WEFT_BENCH_REPEAT'] ?? 3);
const POOL_BYTES = 64 * 1024 * 1024;
const IO_CHUNK = 8 * 1024 * 1024;
const MB = 1e6;
const BENCH = 'shuffle-remote/blocking';

interface Figure {
  bench: string;
  metric: string;
  unit: string;
  value: number;
  baseline: string;
  baselineValue: number;
  ratio: number;
}
const figures: Figure[] = [];
const round = (x: number, digits = 3): number => Math.round(x * 10 ** digits) / 10 ** digits;
function report(metric: string, unit: string, value: number, baseline: string, baselineValue: number): void {
  figures.push({ bench: BENCH, metric, unit, value: round(value), baseline, baselineValue: round(baselineValue), ratio: round(value / baselineValue) });
}

/** 64 MiB of record bytes, cycled: text-like (words and numbers) or random. */
function makePool(kind: 'text' | 'random'): Buffer {
  const pool = Buffer.allocUnsafe(POOL_BYTES);
  if (kind === 'random') return randomFillSync(pool);
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'shuffle', 'partition', 'record', 'weft', 'region', 'block'];
  let seed = 12345;
  let p = 0;
  while (p < POOL_BYTES) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const word = `${words[seed % words.length]}:${seed % 100000}${seed % 7 === 0 ? '\n' : ' '}`;
    p += pool.write(word, p, 'latin1');
  }
  return pool;
}

const RECORDS_PER_POOL = Math.floor(POOL_BYTES / RECORD);
const recordCount = Math.floor(TOTAL / RECORD);
const totalBytes = recordCount * RECORD;

function* chunksOf(pool: Buffer): Generator<Buffer> {
  for (let done = 0; done < totalBytes; done += IO_CHUNK) {
    const n = Math.min(IO_CHUNK, totalBytes - done);
    const at = done % POOL_BYTES;
    yield at + n <= POOL_BYTES ? pool.subarray(at, at + n) : Buffer.concat([pool.subarray(at), pool.subarray(0, n - (POOL_BYTES - at))]);
  }
}

interface Timing {
  writeSeconds: number;
  readSeconds: number;
}

/** Flushes dirty pages, so each run starts from the same writeback state whatever ran before it. */
function settleDisks(): void {
  execFileSync('sync');
  globalThis.gc?.();
}

async function rawFs(pool: Buffer, dir: string): Promise<Timing> {
  const path = join(dir, 'raw.bin');
  settleDisks();
  let t = performance.now();
  const out = await open(path, 'w');
  for (const chunk of chunksOf(pool)) await out.write(chunk);
  await out.close();
  const writeSeconds = (performance.now() - t) / 1000;
  t = performance.now();
  const input = await open(path, 'r');
  const buffer = Buffer.allocUnsafe(IO_CHUNK);
  let read = 0;
  for (;;) {
    const { bytesRead } = await input.read(buffer, 0, IO_CHUNK, null);
    if (bytesRead === 0) break;
    read += bytesRead;
  }
  await input.close();
  const readSeconds = (performance.now() - t) / 1000;
  await rm(path, { force: true });
  if (read !== totalBytes) throw new Error(`raw fs read ${read} of ${totalBytes} bytes`);
  return { writeSeconds, readSeconds };
}

interface ShuffleRun extends Timing {
  peakBufferedBytes: number;
  peakRssDelta: number;
  memoryLimitBytes: number;
}

async function throughShuffle(pool: Buffer, options: RemoteShuffleOptions, label: string): Promise<ShuffleRun> {
  const factory = createRemoteShuffleServiceFactory(options);
  const master = factory.createShuffleMaster();
  await master.start();
  const env = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('bench') });
  try {
    const job = jobId(`bench-${label}-${Date.now()}`);
    await master.registerJob({ jobId: job });
    const descriptor = await master.registerPartitionWithProducer({
      jobId: job,
      partition: {
        resultId: intermediateResultId('bench'),
        partitionId: resultPartitionId('bench', 0),
        partitionIndex: 0,
        partitionType: 'BLOCKING',
        numberOfSubpartitions: SUBPARTITIONS,
      },
      producer: { producerId: executionAttemptId(executionVertexId('src', 0), 0), attempt: 0, taskExecutorId: taskExecutorId('bench') },
    });
    settleDisks();
    const rssBefore = process.memoryUsage.rss();
    let peakRss = rssBefore;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
    }, 10);
    let peakBufferedBytes = 0;
    let t = performance.now();
    const writer = await env.createResultPartitionWriter({ descriptor });
    for (let i = 0; i < recordCount; i++) {
      const at = (i % RECORDS_PER_POOL) * RECORD;
      const more = writer.emitRecord(pool.subarray(at, at + RECORD), i % SUBPARTITIONS);
      if ((i & 255) === 0) peakBufferedBytes = Math.max(peakBufferedBytes, writer.metrics.bufferedBytes);
      if (!more) {
        peakBufferedBytes = Math.max(peakBufferedBytes, writer.metrics.bufferedBytes);
        await writer.ready();
      }
    }
    await writer.finish();
    clearInterval(sampler);
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
    const memoryLimitBytes = writer.metrics.memoryLimitBytes;
    await writer.close();
    const writeSeconds = (performance.now() - t) / 1000;
    t = performance.now();
    let records = 0;
    let bytes = 0;
    await Promise.all(
      Array.from({ length: SUBPARTITIONS }, async (_, s) => {
        const gate = await env.createInputGate({ jobId: job, inputs: [descriptor], subpartitions: { start: s, end: s } });
        try {
          for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
            if (batch.kind !== 'records') continue;
            for (const record of batch.records) bytes += record.length;
            records += batch.records.length;
          }
        } finally {
          await gate.close();
        }
      }),
    );
    const readSeconds = (performance.now() - t) / 1000;
    if (records !== recordCount || bytes !== totalBytes) throw new Error(`${label}: read ${records} records / ${bytes} bytes, wrote ${recordCount} / ${totalBytes}`);
    await master.releasePartitionExternally(descriptor);
    return { writeSeconds, readSeconds, peakBufferedBytes, peakRssDelta: peakRss - rssBefore, memoryLimitBytes };
  } finally {
    await env.close();
    await master.close();
  }
}

const rows: string[][] = [];
const mbps = (t: Timing): number => totalBytes / MB / (t.writeSeconds + t.readSeconds);
function row(what: string, t: Timing, extra = ''): void {
  rows.push([what, (totalBytes / MB / t.writeSeconds).toFixed(0), (totalBytes / MB / t.readSeconds).toFixed(0), mbps(t).toFixed(0), extra]);
}
const best = (runs: Timing[]): Timing => runs.reduce((a, b) => (mbps(a) >= mbps(b) ? a : b));

async function benchLocal(kind: 'text' | 'random', pool: Buffer): Promise<void> {
  await using dir = await createTempDir('weft-bench-local-');
  const options = (compression: 'lz4' | 'none'): RemoteShuffleOptions => ({
    store: `file://${join(dir.path, `data-${compression}`)}`,
    meta: `sqlite://${join(dir.path, `meta-${compression}.db`)}`,
    compression,
  });
  const raw: Timing[] = [];
  const lz4: ShuffleRun[] = [];
  const none: ShuffleRun[] = [];
  for (let rep = 0; rep < REPEAT; rep++) {
    raw.push(await rawFs(pool, dir.path));
    lz4.push(await throughShuffle(pool, options('lz4'), `local-${kind}-${rep}`));
    none.push(await throughShuffle(pool, options('none'), `local-none-${kind}-${rep}`));
  }
  const r = best(raw);
  const o = best(lz4) as ShuffleRun;
  const n = best(none) as ShuffleRun;
  const memory = (run: ShuffleRun): string =>
    `peak buffered ${(run.peakBufferedBytes / 2 ** 20).toFixed(1)} MiB, RSS +${(run.peakRssDelta / 2 ** 20).toFixed(0)} MiB, limit ${(run.memoryLimitBytes / 2 ** 20).toFixed(0)} MiB`;
  row(`raw fs write+read (${kind})`, r);
  row(`local dir + SQLite, LZ4 (${kind})`, o, memory(o));
  row(`local dir + SQLite, no compression (${kind})`, n, memory(n));
  report(`local-sqlite-write-read-${kind}`, 'MB/s', mbps(o), 'raw-fs-write-read', mbps(r));
  report(`local-sqlite-uncompressed-write-read-${kind}`, 'MB/s', mbps(n), 'raw-fs-write-read', mbps(r));
  report(`local-sqlite-producer-peak-buffered-${kind}`, 'bytes', o.peakBufferedBytes, 'producerMemoryBytes', o.memoryLimitBytes);
  report(`local-sqlite-producer-peak-rss-delta-${kind}`, 'bytes', o.peakRssDelta, 'producerMemoryBytes', o.memoryLimitBytes);
  // what LZ4 alone costs on this data and CPU, one thread: compress then decompress 64 MiB in 32 KiB blocks
  const sample = pool.subarray(0, Math.min(pool.length, 64 * 1024 * 1024));
  const t = performance.now();
  for (let at = 0; at < sample.length; at += 32768) uncompressSync(compressSync(sample.subarray(at, at + 32768)));
  const lz4Seconds = (performance.now() - t) / 1000;
  const lz4Rate = sample.length / MB / lz4Seconds;
  rows.push([`LZ4 compress+decompress only, 1 thread (${kind})`, '', '', lz4Rate.toFixed(0), `${(totalBytes / MB / lz4Rate).toFixed(2)} s of CPU for the whole data set`]);
  report(`lz4-compress-decompress-one-thread-${kind}`, 'MB/s', lz4Rate, 'raw-fs-write-read', mbps(r));
  // what the format costs without any I/O, one thread: frame every record, CRC32C every block (written,
  // then verified on read), deframe every block back into record views
  const f = formatCost(pool);
  rows.push([`frame + CRC32C x2 + deframe only, 1 thread (${kind})`, '', '', f.toFixed(0), `${(totalBytes / MB / f).toFixed(2)} s of CPU; raw fs took ${(totalBytes / MB / mbps(r)).toFixed(2)} s`]);
  report(`format-cpu-frame-crc-deframe-one-thread-${kind}`, 'MB/s', f, 'raw-fs-write-read', mbps(r));
}

/** MB/s of framing, checksumming (twice) and deframing the whole data set in memory, on one thread. */
function formatCost(pool: Buffer): number {
  const BLOCK = 32 * 1024;
  const blocks: Uint8Array[] = Array.from({ length: 64 }, () => new Uint8Array(BLOCK));
  let next = 0;
  let checksum = 0;
  const deframer = new RecordDeframer(RECORD + 1);
  const records: Uint8Array[] = [];
  const framer = new RecordFramer(
    BLOCK,
    () => blocks[next++ % blocks.length]!,
    (segment, length) => {
      const block = segment.subarray(0, length);
      checksum ^= crc32c(block as Buffer);
      checksum ^= crc32c(block as Buffer);
      records.length = 0;
      deframer.push(block, records);
    },
  );
  const t = performance.now();
  for (let i = 0; i < recordCount; i++) {
    const at = (i % RECORDS_PER_POOL) * RECORD;
    framer.write(pool.subarray(at, at + RECORD));
  }
  framer.flush();
  const seconds = (performance.now() - t) / 1000;
  if (checksum !== 0) throw new Error('checksums of equal blocks must cancel');
  return totalBytes / MB / seconds;
}

async function benchS3(kind: 'text' | 'random', pool: Buffer): Promise<void> {
  await using s3 = await startS3Server({ buckets: ['bench'] });
  await using redis = await startRedis({ persistent: false });
  const client = s3.client();
  // raw single PutObject / GetObject
  let t = performance.now();
  await client.send(new PutObjectCommand({ Bucket: 'bench', Key: 'raw', Body: Readable.from(chunksOf(pool)), ContentLength: totalBytes }));
  const putSeconds = (performance.now() - t) / 1000;
  t = performance.now();
  let n = 0;
  for await (const chunk of (await client.send(new GetObjectCommand({ Bucket: 'bench', Key: 'raw' }))).Body as Readable) n += (chunk as Buffer).length;
  const raw: Timing = { writeSeconds: putSeconds, readSeconds: (performance.now() - t) / 1000 };
  if (n !== totalBytes) throw new Error(`raw GetObject returned ${n} bytes`);
  await client.send(new DeleteObjectCommand({ Bucket: 'bench', Key: 'raw' }));
  // raw multipart upload of the same bytes (8 MiB parts), ranged GETs of 8 MiB
  t = performance.now();
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: 'bench', Key: 'raw-mp' }));
  const parts: { ETag: string; PartNumber: number }[] = [];
  for (const chunk of chunksOf(pool)) {
    const PartNumber = parts.length + 1;
    const out = await client.send(new UploadPartCommand({ Bucket: 'bench', Key: 'raw-mp', UploadId, PartNumber, Body: chunk, ContentLength: chunk.length }));
    parts.push({ ETag: out.ETag ?? '', PartNumber });
  }
  await client.send(new CompleteMultipartUploadCommand({ Bucket: 'bench', Key: 'raw-mp', UploadId, MultipartUpload: { Parts: parts } }));
  const mpPut = (performance.now() - t) / 1000;
  t = performance.now();
  n = 0;
  for (let at = 0; at < totalBytes; at += IO_CHUNK) {
    const range = `bytes=${at}-${Math.min(totalBytes, at + IO_CHUNK) - 1}`;
    for await (const chunk of (await client.send(new GetObjectCommand({ Bucket: 'bench', Key: 'raw-mp', Range: range }))).Body as Readable) n += (chunk as Buffer).length;
  }
  const multipart: Timing = { writeSeconds: mpPut, readSeconds: (performance.now() - t) / 1000 };
  await client.send(new DeleteObjectCommand({ Bucket: 'bench', Key: 'raw-mp' }));
  const o = await throughShuffle(
    pool,
    {
      store: { type: 's3', bucket: 'bench', prefix: 'shuffle/', endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      meta: redis.url,
    },
    `s3-${kind}`,
  );
  row(`raw S3 PutObject+GetObject (${kind})`, raw);
  row(`raw S3 multipart+ranged GETs (${kind})`, multipart);
  row(`S3 + Redis (${kind})`, o, `peak buffered ${(o.peakBufferedBytes / 2 ** 20).toFixed(1)} MiB, RSS +${(o.peakRssDelta / 2 ** 20).toFixed(0)} MiB, limit ${(o.memoryLimitBytes / 2 ** 20).toFixed(0)} MiB`);
  report(`s3-redis-write-read-${kind}`, 'MB/s', mbps(o), 'raw-s3-put-get', mbps(raw));
  report(`s3-redis-write-read-${kind}`, 'MB/s', mbps(o), 'raw-s3-multipart-put-ranged-get', mbps(multipart));
  report(`s3-redis-producer-peak-buffered-${kind}`, 'bytes', o.peakBufferedBytes, 'producerMemoryBytes', o.memoryLimitBytes);
  report(`s3-redis-producer-peak-rss-delta-${kind}`, 'bytes', o.peakRssDelta, 'producerMemoryBytes', o.memoryLimitBytes);
}

const only = process.env['WEFT_BENCH_ONLY'];
for (const kind of ['text', 'random'] as const) {
  const pool = makePool(kind);
  if (only !== 's3') await benchLocal(kind, pool);
  if (only !== 'local') await benchS3(kind, pool);
}

console.log(`\n${(totalBytes / 2 ** 30).toFixed(2)} GiB in ${RECORD}-byte records, ${SUBPARTITIONS} subpartitions; write and read MB/s (1 MB = 10^6 bytes)\n`);
const header = ['path', 'write', 'read', 'write+read', 'producer memory'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
for (const r of [header, ...rows]) console.log(r.map((cell, i) => cell.padEnd(widths[i]!)).join('  '));
console.log('');
for (const figure of figures) console.log(JSON.stringify(figure));
