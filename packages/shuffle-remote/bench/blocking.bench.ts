// Write then read 1 GiB through persisted blocking partitions, against the raw storage underneath:
// (a) local directory + SQLite metadata vs raw `fs` write+read of the same bytes;
// (b) S3 (a real s3rver) + Redis (a real redis-server) vs raw PutObject/GetObject of the same bytes to the
//     same server (and the `upload: 'multipart'` mode, and a raw multipart upload, for reference);
// the producer's peak memory (metrics.bufferedBytes and RSS) against producerMemoryBytes; and the CPU of
// each stage of the format on one thread without I/O (frame, CRC32C, deframe, LZ4), per GiB.
// Two data sets: text-like records (LZ4 halves them) and random records (incompressible).
// Environment: WEFT_BENCH_BYTES (default 1 GiB), WEFT_BENCH_RECORD_BYTES (default 1024), WEFT_BENCH_REPEAT
// (runs of each local configuration, default 3; of each S3 configuration, default 1: WEFT_BENCH_S3_REPEAT),
// WEFT_BENCH_ONLY=local|s3, WEFT_BENCH_DATA=text|random.
import { execFileSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
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
import { DEFAULT_REMOTE_SHUFFLE_OPTIONS, type RemoteShuffleOptions, createRemoteShuffleServiceFactory, writerBudget } from '@weft/shuffle-remote';
import { BenchReport, createTempDir, startRedis, startS3Server } from '@weft/testkit';
import { rawBlockChecksum } from '../src/format/block-codec.js';
import { crc32cImplementation } from '../src/format/checksum.js';
import { crc32cJs } from '../src/format/crc32c-js.js';
import { loadNativeCrc32c } from '../src/format/crc32c-native.js';

const TOTAL = Number(process.env['WEFT_BENCH_BYTES'] ?? 1024 ** 3);
const RECORD = Number(process.env['WEFT_BENCH_RECORD_BYTES'] ?? 1024);
const REPEAT = Number(process.env['WEFT_BENCH_REPEAT'] ?? 3);
const S3_REPEAT = Number(process.env['WEFT_BENCH_S3_REPEAT'] ?? 1);
const SUBPARTITIONS = 8;
const POOL_BYTES = 64 * 1024 * 1024;
const IO_CHUNK = 8 * 1024 * 1024;
const MB = 1e6;
const MiB = 2 ** 20;
const GiB = 2 ** 30;

const out = new BenchReport('shuffle-remote/blocking');

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

const recordCount = Math.floor(TOTAL / RECORD);
const totalBytes = recordCount * RECORD;

/** The pool as record views, made once: the producer's records exist before the shuffle sees them, as the raw baseline's bytes do. */
function recordsOf(pool: Buffer): Buffer[] {
  return Array.from({ length: Math.floor(POOL_BYTES / RECORD) }, (_, k) => pool.subarray(k * RECORD, (k + 1) * RECORD));
}

function* chunksOf(pool: Buffer): Generator<Buffer> {
  for (let done = 0; done < totalBytes; done += IO_CHUNK) {
    const n = Math.min(IO_CHUNK, totalBytes - done);
    const at = done % POOL_BYTES;
    yield at + n <= POOL_BYTES ? pool.subarray(at, at + n) : Buffer.concat([pool.subarray(at), pool.subarray(0, n - (POOL_BYTES - at))]);
  }
}

/** Wall and CPU (process.cpuUsage: every thread of this process, the thread pool's file I/O included) of one phase. */
interface Phase {
  seconds: number;
  cpuSeconds: number;
}

async function phase(body: () => Promise<void>): Promise<Phase> {
  const cpu = process.cpuUsage();
  const t = performance.now();
  await body();
  const used = process.cpuUsage(cpu);
  return { seconds: (performance.now() - t) / 1000, cpuSeconds: (used.user + used.system) / 1e6 };
}

interface Run {
  write: Phase;
  read: Phase;
  peakBufferedBytes?: number;
  peakRssDelta?: number;
  memoryLimitBytes?: number;
}

const mbps = (r: Run): number => totalBytes / MB / (r.write.seconds + r.read.seconds);
const best = (runs: Run[]): Run => runs.reduce((a, b) => (mbps(a) >= mbps(b) ? a : b));

/**
 * Puts every run in the same state: dirty pages flushed (whatever ran before), a full GC, and 1 GiB of
 * page cache written and freed just before the clock starts. In this VM, memory the guest freed a while
 * ago goes back to the host and is faulted in again at first use (the first write of a gigabyte can
 * take 5× longer); freeing a gigabyte just before each run — raw or shuffle — gives each the same warm pages.
 */
async function settleDisks(dir: string, pool: Buffer): Promise<void> {
  execFileSync('sync');
  globalThis.gc?.();
  const path = join(dir, 'warm.bin');
  const file = await open(path, 'w');
  for (const chunk of chunksOf(pool)) await file.write(chunk);
  await file.close();
  await rm(path, { force: true });
}

async function rawFs(pool: Buffer, dir: string): Promise<Run> {
  const path = join(dir, 'raw.bin');
  await settleDisks(dir, pool);
  const write = await phase(async () => {
    const file = await open(path, 'w');
    for (const chunk of chunksOf(pool)) await file.write(chunk);
    await file.close();
  });
  let read = 0;
  const readPhase = await phase(async () => {
    const file = await open(path, 'r');
    const buffer = Buffer.allocUnsafe(IO_CHUNK);
    for (;;) {
      const { bytesRead } = await file.read(buffer, 0, IO_CHUNK, null);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    await file.close();
  });
  await rm(path, { force: true });
  if (read !== totalBytes) throw new Error(`raw fs read ${read} of ${totalBytes} bytes`);
  return { write, read: readPhase };
}

async function throughShuffle(records: Buffer[], options: RemoteShuffleOptions, label: string, warm: { dir: string; pool: Buffer }): Promise<Run> {
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
    await settleDisks(warm.dir, warm.pool);
    const rssBefore = process.memoryUsage.rss();
    let peakRss = rssBefore;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
    }, 10);
    let peakBufferedBytes = 0;
    let memoryLimitBytes = 0;
    const write = await phase(async () => {
      const writer = await env.createResultPartitionWriter({ descriptor });
      const sample = setInterval(() => {
        peakBufferedBytes = Math.max(peakBufferedBytes, writer.metrics.bufferedBytes);
      }, 2);
      try {
        for (let i = 0; i < recordCount; i++) {
          if (!writer.emitRecord(records[i % records.length]!, i % SUBPARTITIONS)) {
            peakBufferedBytes = Math.max(peakBufferedBytes, writer.metrics.bufferedBytes);
            await writer.ready();
          }
        }
        await writer.finish();
      } finally {
        clearInterval(sample);
      }
      memoryLimitBytes = writer.metrics.memoryLimitBytes;
      await writer.close();
    });
    clearInterval(sampler);
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
    let count = 0;
    let bytes = 0;
    const read = await phase(async () => {
      await Promise.all(
        Array.from({ length: SUBPARTITIONS }, async (_, s) => {
          const gate = await env.createInputGate({ jobId: job, inputs: [descriptor], subpartitions: { start: s, end: s } });
          try {
            for (let batch = await gate.readBatch(); batch !== null; batch = await gate.readBatch()) {
              if (batch.kind !== 'records') continue;
              for (const record of batch.records) bytes += record.length;
              count += batch.records.length;
            }
          } finally {
            await gate.close();
          }
        }),
      );
    });
    if (count !== recordCount || bytes !== totalBytes) throw new Error(`${label}: read ${count} records / ${bytes} bytes, wrote ${recordCount} / ${totalBytes}`);
    await master.releasePartitionExternally(descriptor);
    return { write, read, peakBufferedBytes, peakRssDelta: peakRss - rssBefore, memoryLimitBytes };
  } finally {
    await env.close();
    await master.close();
  }
}

function row(what: string, runs: Run[], vs?: Run): void {
  const r = best(runs);
  const memory =
    r.memoryLimitBytes === undefined
      ? ''
      : `peak buffered ${(r.peakBufferedBytes! / MiB).toFixed(1)} MiB, RSS +${(r.peakRssDelta! / MiB).toFixed(0)} MiB, limit ${(r.memoryLimitBytes / MiB).toFixed(0)} MiB`;
  out.row(
    what,
    (totalBytes / MB / r.write.seconds).toFixed(0),
    (totalBytes / MB / r.read.seconds).toFixed(0),
    mbps(r).toFixed(0),
    vs === undefined ? '' : `${((100 * mbps(r)) / mbps(vs)).toFixed(0)} %`,
    `${(r.write.cpuSeconds + r.read.cpuSeconds).toFixed(2)} (${r.write.cpuSeconds.toFixed(2)} + ${r.read.cpuSeconds.toFixed(2)})`,
    runs.map((run) => mbps(run).toFixed(0)).join(' '),
    memory,
  );
}

function reportRun(metric: string, r: Run, baseline: string, base: Run): void {
  out.report(metric, 'MB/s', mbps(r), baseline, mbps(base));
  out.report(`${metric}-cpu`, 's', r.write.cpuSeconds + r.read.cpuSeconds, `${baseline}-cpu`, base.write.cpuSeconds + base.read.cpuSeconds);
  if (r.memoryLimitBytes !== undefined) {
    out.report(`${metric}-producer-peak-buffered`, 'bytes', r.peakBufferedBytes!, 'producerMemoryBytes', r.memoryLimitBytes);
    out.report(`${metric}-producer-peak-rss-delta`, 'bytes', r.peakRssDelta!, 'producerMemoryBytes', r.memoryLimitBytes);
  }
}

async function benchLocal(kind: 'text' | 'random', pool: Buffer, records: Buffer[]): Promise<void> {
  await using dir = await createTempDir('weft-bench-local-');
  // the default options (no LZ4 for a local directory: DEFAULT_COMPRESSION_BY_STORE), and LZ4 asked for
  const options = (compression: 'default' | 'lz4'): RemoteShuffleOptions => ({
    store: `file://${join(dir.path, `data-${compression}`)}`,
    meta: `sqlite://${join(dir.path, `meta-${compression}.db`)}`,
    ...(compression === 'lz4' ? { compression } : {}),
  });
  const raw: Run[] = [];
  const lz4: Run[] = [];
  const byDefault: Run[] = [];
  for (let rep = 0; rep < REPEAT; rep++) {
    raw.push(await rawFs(pool, dir.path));
    byDefault.push(await throughShuffle(records, options('default'), `local-default-${kind}-${rep}`, { dir: dir.path, pool }));
    lz4.push(await throughShuffle(records, options('lz4'), `local-lz4-${kind}-${rep}`, { dir: dir.path, pool }));
  }
  const r = best(raw);
  row(`raw fs write+read (${kind})`, raw);
  row(`local dir + SQLite, default options: no LZ4 (${kind})`, byDefault, r);
  row(`local dir + SQLite, compression 'lz4' (${kind})`, lz4, r);
  reportRun(`local-sqlite-write-read-${kind}`, best(byDefault), 'raw-fs-write-read', r);
  reportRun(`local-sqlite-lz4-write-read-${kind}`, best(lz4), 'raw-fs-write-read', r);
  stageCosts(kind, records, r);
}

/** CPU seconds of `body` on this thread. */
function cpuOf(body: () => void): number {
  const cpu = process.cpuUsage();
  body();
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / 1e6;
}

/**
 * What each stage of the format costs on one thread without I/O, per GiB of records, in the writer's
 * block size: framing (RecordFramer into blocks), framing with each block checksummed as it fills (the
 * writer without LZ4), one CRC32C pass over every block in memory with each implementation (a read
 * verifies one), deframing (record views), LZ4 compress and decompress.
 */
function stageCosts(kind: string, records: Buffer[], raw: Run): void {
  const block = writerBudget(DEFAULT_REMOTE_SHUFFLE_OPTIONS.producerMemoryBytes, SUBPARTITIONS, DEFAULT_REMOTE_SHUFFLE_OPTIONS.bufferSizeBytes, 0).blockBytes;
  const sample = Math.min(totalBytes, 256 * MiB);
  const n = Math.floor(sample / RECORD);
  // blocks are touched beforehand, as the writer's sort buffer recycles its blocks (fresh memory would measure page faults)
  const pool = Array.from({ length: Math.ceil((n * (RECORD + 4)) / block) + 1 }, () => new Uint8Array(block).fill(1));
  const blocks: Uint8Array[] = [];
  let allocated = 0;
  const framing = cpuOf(() => {
    const framer = new RecordFramer(
      block,
      () => pool[allocated++]!,
      (segment, length) => blocks.push(segment.subarray(0, length)),
    );
    for (let i = 0; i < n; i++) framer.write(records[i % records.length]!);
    framer.flush();
  });
  const perGiB = (seconds: number, bytes = sample): number => (seconds * GiB) / bytes;
  let x = 0;
  const crcOf = (fn: (bytes: Uint8Array, initial: number) => number): number =>
    cpuOf(() => {
      for (const b of blocks) x ^= fn(b, 0);
    });
  const crcStages: [string, number][] = [];
  for (const name of ['@node-rs/crc32', 'aws-crt'] as const) {
    const native = loadNativeCrc32c(name);
    if (native !== undefined) crcStages.push([`CRC32C ${name}, one pass over the blocks in memory`, perGiB(crcOf(native.crc32c))]);
  }
  crcStages.push(['CRC32C JavaScript fallback, one pass', perGiB(crcOf(crc32cJs))]);
  // the writer without LZ4: each block checksummed the moment it is full (in cache), by the CRC32C in use
  allocated = 0;
  const framedChecked = cpuOf(() => {
    const framer = new RecordFramer(
      block,
      () => pool[allocated++]!,
      (segment, length) => (x ^= rawBlockChecksum(1, segment.subarray(0, length))),
    );
    for (let i = 0; i < n; i++) framer.write(records[i % records.length]!);
    framer.flush();
  });
  const deframer = new RecordDeframer(RECORD + 1);
  const views: Uint8Array[] = [];
  const deframing = cpuOf(() => {
    for (const b of blocks) {
      views.length = 0;
      deframer.push(b, views);
    }
  });
  const lz4Sample = blocks.slice(0, Math.ceil((64 * MiB) / block));
  const lz4Bytes = lz4Sample.reduce((sum, b) => sum + b.length, 0);
  const compressed: Buffer[] = [];
  const compress = cpuOf(() => {
    for (const b of lz4Sample) compressed.push(compressSync(b as Buffer));
  });
  const decompress = cpuOf(() => {
    for (const c of compressed) uncompressSync(c);
  });
  const rawCpu = ((raw.write.cpuSeconds + raw.read.cpuSeconds) * GiB) / totalBytes;
  const rawWall = ((raw.write.seconds + raw.read.seconds) * GiB) / totalBytes;
  const stages: [string, number][] = [
    ['frame records into blocks', perGiB(framing)],
    [`frame and checksum each block as it fills (${crc32cImplementation()}; the writer without LZ4)`, perGiB(framedChecked)],
    ...crcStages,
    ['deframe into record views', perGiB(deframing)],
    ['LZ4 compress', perGiB(compress, lz4Bytes)],
    ['LZ4 decompress', perGiB(decompress, lz4Bytes)],
  ];
  for (const [stage, seconds] of stages) {
    out.row(`  CPU: ${stage} (${kind}, ${block / 1024} KiB blocks)`, '', '', '', '', `${seconds.toFixed(3)} s/GiB`, '', `raw fs write+read: ${rawWall.toFixed(3)} s/GiB wall, ${rawCpu.toFixed(3)} s/GiB CPU`);
    out.report(`cpu-${stage.replace(/[^a-zA-Z0-9]+/g, '-').replace(/-+$/, '').toLowerCase()}-${kind}`, 's/GiB', seconds, 'raw-fs-write-read-s-per-gib', rawWall);
  }
  if (x === 0.5) console.log(x); // keep the checksums alive
}

async function benchS3(kind: 'text' | 'random', pool: Buffer, records: Buffer[]): Promise<void> {
  await using s3 = await startS3Server({ buckets: ['bench'] });
  await using redis = await startRedis({ persistent: false });
  await using dir = await createTempDir('weft-bench-s3-');
  const warm = { dir: dir.path, pool };
  const client = s3.client();
  const store = { type: 's3', bucket: 'bench', endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } as const;
  const raw: Run[] = [];
  const rawMultipart: Run[] = [];
  const spill: Run[] = [];
  const multipart: Run[] = [];
  for (let rep = 0; rep < S3_REPEAT; rep++) {
    raw.push(await rawS3(client, pool, dir.path));
    spill.push(await throughShuffle(records, { store: { ...store, prefix: `spill-${rep}/` }, meta: redis.url }, `s3-${kind}-${rep}`, warm));
    rawMultipart.push(await rawS3Multipart(client, pool, dir.path));
    multipart.push(await throughShuffle(records, { store: { ...store, prefix: `mp-${rep}/`, upload: 'multipart' }, meta: redis.url }, `s3-mp-${kind}-${rep}`, warm));
  }
  const r = best(raw);
  row(`raw S3 PutObject+GetObject (${kind})`, raw);
  row(`S3 + Redis, upload 'spill' (default) (${kind})`, spill, r);
  row(`raw S3 multipart (8 MiB parts) + 8 MiB ranged GETs (${kind})`, rawMultipart, r);
  row(`S3 + Redis, upload 'multipart' (${kind})`, multipart, r);
  reportRun(`s3-redis-write-read-${kind}`, best(spill), 'raw-s3-put-get', r);
  reportRun(`s3-redis-multipart-write-read-${kind}`, best(multipart), 'raw-s3-put-get', r);
  out.report(`raw-s3-multipart-write-read-${kind}`, 'MB/s', mbps(best(rawMultipart)), 'raw-s3-put-get', mbps(r));
}

type S3Client = ReturnType<Awaited<ReturnType<typeof startS3Server>>['client']>;

async function rawS3(client: S3Client, pool: Buffer, dir: string): Promise<Run> {
  await settleDisks(dir, pool);
  const write = await phase(async () => {
    await client.send(new PutObjectCommand({ Bucket: 'bench', Key: 'raw', Body: Readable.from(chunksOf(pool)), ContentLength: totalBytes }));
  });
  let n = 0;
  const read = await phase(async () => {
    for await (const chunk of (await client.send(new GetObjectCommand({ Bucket: 'bench', Key: 'raw' }))).Body as Readable) n += (chunk as Buffer).length;
  });
  if (n !== totalBytes) throw new Error(`raw GetObject returned ${n} bytes`);
  await client.send(new DeleteObjectCommand({ Bucket: 'bench', Key: 'raw' }));
  return { write, read };
}

async function rawS3Multipart(client: S3Client, pool: Buffer, dir: string): Promise<Run> {
  await settleDisks(dir, pool);
  const write = await phase(async () => {
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: 'bench', Key: 'raw-mp' }));
    const parts: { ETag: string; PartNumber: number }[] = [];
    for (const chunk of chunksOf(pool)) {
      const PartNumber = parts.length + 1;
      const response = await client.send(new UploadPartCommand({ Bucket: 'bench', Key: 'raw-mp', UploadId, PartNumber, Body: chunk, ContentLength: chunk.length }));
      parts.push({ ETag: response.ETag ?? '', PartNumber });
    }
    await client.send(new CompleteMultipartUploadCommand({ Bucket: 'bench', Key: 'raw-mp', UploadId, MultipartUpload: { Parts: parts } }));
  });
  let n = 0;
  const read = await phase(async () => {
    for (let at = 0; at < totalBytes; at += IO_CHUNK) {
      const Range = `bytes=${at}-${Math.min(totalBytes, at + IO_CHUNK) - 1}`;
      for await (const chunk of (await client.send(new GetObjectCommand({ Bucket: 'bench', Key: 'raw-mp', Range }))).Body as Readable) n += (chunk as Buffer).length;
    }
  });
  if (n !== totalBytes) throw new Error(`raw ranged GETs returned ${n} bytes`);
  await client.send(new DeleteObjectCommand({ Bucket: 'bench', Key: 'raw-mp' }));
  return { write, read };
}

const only = process.env['WEFT_BENCH_ONLY'];
const data = (process.env['WEFT_BENCH_DATA'] ?? 'text,random').split(',') as ('text' | 'random')[];
const loadBefore = loadavg()[0]!;
for (const kind of data) {
  const pool = makePool(kind);
  const records = recordsOf(pool);
  if (only !== 's3') await benchLocal(kind, pool, records);
  if (only !== 'local') await benchS3(kind, pool, records);
}

out.print(
  `${(totalBytes / GiB).toFixed(2)} GiB in ${RECORD}-byte records, ${SUBPARTITIONS} subpartitions, best of ${REPEAT} local / ${S3_REPEAT} S3 runs; ` +
    `${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / GiB).toFixed(0)} GiB, node ${process.version}; load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after\n` +
    'MB/s (1 MB = 10^6 bytes), best run of each; % of the raw baseline above; CPU = process CPU seconds, write + read (every thread of this process: the thread pool and the checksum worker included; s3rver is another process)',
  ['path', 'write', 'read', 'write+read', 'of raw', 'CPU s (best run)', 'write+read of each run', 'producer memory'],
);
