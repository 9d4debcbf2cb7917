// The standalone shuffle server on loopback, each figure against a bare node:http server in the same run:
// (1) push then fetch 1 GiB through one server vs raw undici PUT/GET of the same bytes (the bare server
//     writes the body to a file and streams it back: the least a storage server does);
// (2) 10,000 partitions of 64 KiB (push + commit, fetch) vs raw PUT / GET of the same objects: per-request overhead;
// (3) server RSS while 200 streams push at once, vs the bare server under the same 200 PUTs: every body holds
//     after its first chunk until the server has all 200 open, so the figure is taken with all of them in flight.
// Servers run in child processes (RSS is theirs alone); the client is this process. Both servers write to
// the same temp directory; dirty pages are flushed (sync) between runs, and the order of the runs alternates.
// Environment: WEFT_BENCH_BYTES (default 1 GiB), WEFT_BENCH_SMALL (default 10000), WEFT_BENCH_STREAMS (default 200).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm, stat, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Agent } from 'undici';
import { PartitionFileWriter, type BlobWriter, SubpartitionRangeReader } from '@weft/shuffle-remote';
import { DEFAULT_SHUFFLE_SERVER_CLIENT_OPTIONS, ShuffleServerClient, createJobToken, resolveShuffleServerClientOptions } from '@weft/shuffle-remote/client';
import { BenchReport, createTempDir, round } from '@weft/testkit';
import { FetchedRangeReader } from '../src/client/fetched-range-reader.js';

const TOTAL = Number(process.env['WEFT_BENCH_BYTES'] ?? 1024 ** 3);
const SMALL = Number(process.env['WEFT_BENCH_SMALL'] ?? 10_000);
const STREAMS = Number(process.env['WEFT_BENCH_STREAMS'] ?? 200);
const STREAM_BYTES = 4 * 1024 * 1024;
const CHUNK = 1024 * 1024;
const ROUNDS = 5;
const SMALL_CONCURRENCY = 8;
const SECRET = 'bench-secret-0123456789';
const BENCH = 'shuffle-remote/server';
const MB = 1e6;
const MiB = 1024 * 1024;
const CHILD = fileURLToPath(new URL('./server-bench-child.ts', import.meta.url));

const out = new BenchReport(BENCH);
function report(metric: string, unit: string, value: number, baseline: string, baselineValue: number): void {
  out.report(metric, unit, value, baseline, baselineValue);
  out.row(metric, `${round(value, 1)} ${unit}`, `${round(baselineValue, 1)} ${unit}`, baseline, `${round(value / baselineValue, 2)}`);
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Child {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

async function startChild(mode: 'shuffle' | 'bare', dir: string, options: object = {}): Promise<Child> {
  const extra = (process.env['WEFT_BENCH_CHILD_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
  const child: ChildProcess = spawn(process.execPath, [...extra, '--conditions=source', '--import', 'tsx', CHILD, mode, dir, JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`${mode} server exited (${code})`)));
  });
  return {
    url,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? 0 : Number(match[1]) * 1024;
}

/** Samples a process's RSS every 10 ms until stopped; resolves the peak. */
function sampleRss(pid: number): { stop(): number } {
  let peak = rssOf(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, rssOf(pid));
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssOf(pid));
    },
  };
}

/** A gate every held push body waits at after its first chunk; opening it lets them all go on. */
function gate(): { readonly opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** `buffer` in chunks of `size`, waiting for `held` after the first: the request is open but unfinished until then. */
async function* heldAfterFirstChunk(buffer: Buffer, size: number, held: Promise<void>): AsyncIterable<Uint8Array> {
  for (let at = 0; at < buffer.length; at += size) {
    yield buffer.subarray(at, Math.min(at + size, buffer.length));
    if (at === 0) await held;
  }
}

/**
 * Polls `count` every 10 ms until it reaches `want`; resolves the count then. Throws, naming what it last
 * saw, when `want` is not reached within `timeoutMs`: the figure would not be taken with every stream open.
 */
async function waitUntilOpen(what: string, want: number, count: () => Promise<number>, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let seen = 0;
  for (;;) {
    seen = await count();
    if (seen >= want) return seen;
    if (Date.now() > deadline) throw new Error(`${what}: only ${seen} of ${want} streams were open at once after ${timeoutMs} ms; the memory figure would not be under ${want} concurrent streams`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The shuffle server's own count of pushes and fetches in progress (`/healthz` `activeStreams`). */
async function activeStreams(agent: Agent, url: string): Promise<number> {
  const res = await agent.request({ origin: url, path: '/healthz', method: 'GET' });
  return ((await res.body.json()) as { activeStreams?: number }).activeStreams ?? 0;
}

/**
 * The bare server's count of PUTs in progress: it has no /healthz, so count the files its handler opened
 * for `names` that already hold the first chunk (the handler ran and is receiving the body).
 */
async function bareOpenPuts(dir: string, names: readonly string[]): Promise<number> {
  const sizes = await Promise.all(names.map((name) => stat(join(dir, encodeURIComponent(name))).then((s) => s.size, () => 0)));
  return sizes.filter((size) => size > 0).length;
}

/**
 * Starts `streams` requests whose bodies hold after their first chunk, waits until `count` says all are open
 * at the server, takes its RSS there, then lets them finish; samples RSS throughout. Resolves the peak, the
 * RSS with all open, and how many the server had open. Any request's failure fails the run.
 */
async function heldStreams(
  what: string,
  pid: number,
  streams: number,
  start: (i: number, held: Promise<void>) => Promise<unknown>,
  count: () => Promise<number>,
): Promise<{ peak: number; allOpen: number; reached: number }> {
  const sampler = sampleRss(pid);
  const held = gate();
  let failure: { reason: unknown } | undefined;
  const requests = Promise.allSettled(Array.from({ length: streams }, (_, i) => start(i, held.opened).catch((reason: unknown) => {
    failure ??= { reason };
    throw reason;
  })));
  let reached: number;
  let allOpen: number;
  try {
    reached = await waitUntilOpen(what, streams, async () => {
      if (failure !== undefined) throw new Error(`${what}: a request failed before all were open`, { cause: failure.reason });
      return count();
    });
    allOpen = rssOf(pid);
  } catch (error) {
    held.open();
    await requests;
    sampler.stop();
    throw error;
  }
  held.open();
  const failed = (await requests).find((r) => r.status === 'rejected');
  const peak = sampler.stop();
  if (failed !== undefined) throw new Error(`${what}: a held request failed`, { cause: failed.reason });
  return { peak, allOpen, reached };
}

/** A valid sort-merge object of about `bytes`: regions of `subpartitions` × 32 KiB random raw blocks. */
async function buildObject(bytes: number, subpartitions: number): Promise<{ object: Buffer; subpartitionBytes: number[] }> {
  const pool = randomFillSync(Buffer.allocUnsafe(64 * MiB));
  const chunks: Uint8Array[] = [];
  let written = 0;
  const blob: BlobWriter = {
    key: 'bench',
    bufferedBytes: 0,
    maxRetainedBytes: 0,
    uploadId: undefined,
    get bytesWritten() {
      return written;
    },
    async append(parts) {
      const copy = Buffer.allocUnsafe(parts.reduce((sum, p) => sum + p.length, 0));
      let at = 0;
      for (const part of parts) {
        copy.set(part, at);
        at += part.length;
      }
      chunks.push(copy);
      written += copy.length;
    },
    complete: async () => written,
    abort: async () => undefined,
  };
  const writer = new PartitionFileWriter({ blob, numberOfSubpartitions: subpartitions, compression: 'none' });
  const block = 32 * 1024;
  const regionBlocks = Math.max(1, Math.min(64, Math.floor(bytes / (block * subpartitions))));
  const subpartitionBytes = new Array<number>(subpartitions).fill(0);
  let offset = 0;
  for (let done = 0; done < bytes; ) {
    const lists = Array.from({ length: subpartitions }, () => [] as { kind: 1; bytes: Uint8Array }[]);
    let rawBytes = 0;
    for (let b = 0; b < regionBlocks && done < bytes; b++) {
      for (let s = 0; s < subpartitions && done < bytes; s++) {
        const n = Math.min(block, bytes - done);
        if (offset + n > pool.length) offset = 0;
        lists[s]!.push({ kind: 1, bytes: pool.subarray(offset, offset + n) });
        offset += n;
        done += n;
        rawBytes += n;
        subpartitionBytes[s]! += n;
      }
    }
    await writer.writeRegion({ subpartitions: lists.map((l) => (l.length === 0 ? undefined : l)), rawBytes, blocks: lists.reduce((sum, l) => sum + l.length, 0) });
  }
  await writer.finish();
  return { object: Buffer.concat(chunks), subpartitionBytes };
}

async function* chunked(buffer: Buffer, size = CHUNK): AsyncIterable<Uint8Array> {
  for (let at = 0; at < buffer.length; at += size) yield buffer.subarray(at, Math.min(at + size, buffer.length));
}

async function drainBody(body: AsyncIterable<unknown>): Promise<number> {
  let n = 0;
  for await (const chunk of body) n += (chunk as Uint8Array).length;
  return n;
}

function descriptor(jobId: string, partitionId: string, subpartitions: number, token: string): never {
  return {
    shuffleServiceId: 'shuffle-server',
    jobId,
    partition: { resultId: partitionId.split('#')[0], partitionId, partitionIndex: Number(partitionId.split('#')[1]), partitionType: 'BLOCKING', numberOfSubpartitions: subpartitions },
    producer: { producerId: `bench#0@0`, attempt: 0, taskExecutorId: 'bench' },
    details: { serverId: 'bench', url: 'http://bench', token },
  } as never;
}

/** Flushes dirty pages, so one run's writeback does not slow the next run down. */
function syncDisk(): void {
  spawnSync('sync');
}

/**
 * Writes and deletes `bytes` in `dir`, then flushes: in this VM the first writes into memory after a pause
 * fault guest memory in from the host and run up to 5× slower (blocking.bench does the same), so every
 * timed step starts with that paid, whichever side it measures.
 */
async function settle(dir: string, bytes: Uint8Array): Promise<void> {
  const path = join(dir, 'settle.bin');
  await writeFile(path, bytes);
  await rm(path, { force: true });
  syncDisk();
}

async function seconds(body: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await body();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function main(): Promise<void> {
  const dir = await createTempDir('weft-server-bench-');
  const shuffle = await startChild('shuffle', `${dir.path}/shuffle`);
  // the same server, checking pushed blocks for structure only (readers verify CRCs anyway): what CRC32C costs
  const structural = await startChild('shuffle', `${dir.path}/structural`, { verifyPushChecksums: false });
  const bare = await startChild('bare', `${dir.path}`);
  const job = 'bench';
  const token = createJobToken(Buffer.from(SECRET), job);
  const client = new ShuffleServerClient(resolveShuffleServerClientOptions({ servers: [shuffle.url, structural.url], connectionsPerServer: Math.max(256, STREAMS + 8) }));
  const raw = new Agent({ connections: Math.max(256, STREAMS + 8), keepAliveTimeout: 30_000 });
  try {
    // (1) 1 GiB push and fetch
    const subpartitions = 8;
    const { object, subpartitionBytes } = await buildObject(TOTAL, subpartitions);
    const times = { rawPut: [] as number[], push: [] as number[], pushStructural: [] as number[], rawGet: [] as number[], fetch: [] as number[], verify: [] as number[] };
    // Each write is read back and deleted before the next one starts (dirty pages never pile up behind a
    // later writer), and the order alternates between rounds, so neither side pays for the other's writeback.
    const steps: Record<'raw' | 'shuffle' | 'structural', (r: number) => Promise<void>> = {
      raw: async (r) => {
        const path = `/big-${r}`;
        times.rawPut.push(await seconds(async () => (await raw.request({ origin: bare.url, path, method: 'PUT', body: chunked(object) as never })).body.dump()));
        syncDisk();
        times.rawGet.push(await seconds(async () => drainBody((await raw.request({ origin: bare.url, path, method: 'GET' })).body)));
        await (await raw.request({ origin: bare.url, path, method: 'DELETE' })).body.dump();
      },
      shuffle: async (r) => {
        const target = { url: shuffle.url, token, jobId: job, partitionId: `big#${r}`, attempt: 0 };
        times.push.push(await seconds(() => client.push({ ...target, body: chunked(object) })));
        await client.commit(target, descriptor(job, `big#${r}`, subpartitions, token), subpartitionBytes);
        syncDisk();
        times.fetch.push(await seconds(async () => drainBody((await client.fetch({ ...target, start: 0, end: subpartitions - 1 })).body)));
        times.verify.push(
          await seconds(async () => {
            const response = await client.fetch({ ...target, start: 0, end: subpartitions - 1 });
            const reader = new FetchedRangeReader({ body: response.body, location: response.location, start: 0, end: subpartitions - 1, partitionId: target.partitionId });
            const range = await SubpartitionRangeReader.open({ reader, location: response.location, start: 0, end: subpartitions - 1, readBufferBytes: DEFAULT_SHUFFLE_SERVER_CLIENT_OPTIONS.readBufferBytes, partitionId: target.partitionId });
            while ((await range.next()) !== null);
          }),
        );
        await client.release(shuffle.url, token, job, `big#${r}`);
      },
      structural: async (r) => {
        const target = { url: structural.url, token, jobId: job, partitionId: `big#${r}`, attempt: 0 };
        times.pushStructural.push(await seconds(() => client.push({ ...target, body: chunked(object) })));
        await client.abort(target);
      },
    };
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? (['raw', 'shuffle', 'structural'] as const) : (['structural', 'shuffle', 'raw'] as const);
      for (const step of order) {
        await settle(dir.path, object);
        await steps[step](r);
      }
    }
    const mbps = (s: number): number => object.length / MB / s;
    const rawBaseline = 'raw undici PUT/GET to a bare node:http server (file-backed), same bytes';
    report(`push ${(object.length / 2 ** 30).toFixed(2)} GiB (streamed, validated, to disk)`, 'MB/s', mbps(median(times.push)), rawBaseline, mbps(median(times.rawPut)));
    report(`push ${(object.length / 2 ** 30).toFixed(2)} GiB, structure-only validation (verifyPushChecksums: false)`, 'MB/s', mbps(median(times.pushStructural)), rawBaseline, mbps(median(times.rawPut)));
    report(`fetch ${(object.length / 2 ** 30).toFixed(2)} GiB (8 subpartitions, streamed)`, 'MB/s', mbps(median(times.fetch)), rawBaseline, mbps(median(times.rawGet)));
    report(`fetch ${(object.length / 2 ** 30).toFixed(2)} GiB + CRC32C/index verification (as a gate reads)`, 'MB/s', mbps(median(times.verify)), rawBaseline, mbps(median(times.rawGet)));

    // (2) many small partitions
    const small = await buildObject(64 * 1024 - 256, 2);
    const run = async (work: (i: number) => Promise<unknown>): Promise<number> =>
      seconds(() =>
        Promise.all(
          Array.from({ length: SMALL_CONCURRENCY }, async (_, w) => {
            for (let i = w; i < SMALL; i += SMALL_CONCURRENCY) await work(i);
          }),
        ),
      );
    const smallTarget = (i: number) => ({ url: shuffle.url, token, jobId: job, partitionId: `small#${i}`, attempt: 0 });
    const rawSmallPut = await run(async (i) => (await raw.request({ origin: bare.url, path: `/small-${i}`, method: 'PUT', body: small.object })).body.dump());
    // as a writer does for a partition this small: push and commit in one request (x-weft-commit)
    const smallPush = await run((i) => client.pushAndCommit({ ...smallTarget(i), body: [small.object], length: small.object.length }, descriptor(job, `small#${i}`, 2, token), small.subpartitionBytes));
    const rawSmallGet = await run(async (i) => drainBody((await raw.request({ origin: bare.url, path: `/small-${i}`, method: 'GET' })).body));
    const smallFetch = await run(async (i) => drainBody((await client.fetch({ ...smallTarget(i), start: 0, end: 1 })).body));
    const perSecond = (s: number): number => SMALL / s;
    report(`${SMALL} partitions x 64 KiB: push + commit`, 'partitions/s', perSecond(smallPush), 'raw undici PUT of the same objects', perSecond(rawSmallPut));
    report(`${SMALL} partitions x 64 KiB: fetch`, 'partitions/s', perSecond(smallFetch), 'raw undici GET of the same objects', perSecond(rawSmallGet));
    report(
      `time per partition, push + commit + fetch, ${SMALL_CONCURRENCY} at a time (lower is better)`,
      'us',
      ((smallPush + smallFetch) / SMALL) * 1e6 * SMALL_CONCURRENCY,
      'raw PUT + GET latency at the same concurrency',
      ((rawSmallPut + rawSmallGet) / SMALL) * 1e6 * SMALL_CONCURRENCY,
    );
    await client.releaseJob(shuffle.url, token, job, false);

    // (3) memory under concurrent pushes: a quarter of STREAMS, then STREAMS; bounded means the peak hardly grows.
    // Every body holds after its first chunk until the server has all of them open (the shuffle server's
    // activeStreams; the bare server's files receiving a body), RSS is taken there, then they all finish.
    const stream = await buildObject(STREAM_BYTES, 4);
    const idleShuffle = rssOf(shuffle.pid);
    const idleBare = rssOf(bare.pid);
    const reachedRows: string[][] = [];
    for (const streams of [Math.max(1, Math.floor(STREAMS / 4)), STREAMS]) {
      syncDisk();
      const names = Array.from({ length: streams }, (_, i) => `/stream-${i}`);
      const bareRun = await heldStreams(
        `bare node:http server, ${streams} PUTs`,
        bare.pid,
        streams,
        async (i, held) => (await raw.request({ origin: bare.url, path: names[i]!, method: 'PUT', body: heldAfterFirstChunk(stream.object, 64 * 1024, held) as never })).body.dump(),
        () => bareOpenPuts(dir.path, names),
      );
      for (const name of names) await (await raw.request({ origin: bare.url, path: name, method: 'DELETE' })).body.dump();
      syncDisk();
      const shuffleRun = await heldStreams(
        `shuffle server, ${streams} pushes`,
        shuffle.pid,
        streams,
        (i, held) => client.push({ url: shuffle.url, token, jobId: job, partitionId: `stream-${streams}#${i}`, attempt: 0, body: heldAfterFirstChunk(stream.object, 64 * 1024, held) }),
        () => activeStreams(raw, shuffle.url),
      );
      report(`server peak RSS, ${streams} concurrent pushes of 4 MiB (all open at once, then finishing)`, 'MiB', shuffleRun.peak / MiB, `bare node:http server, ${streams} concurrent PUTs, held the same way`, bareRun.peak / MiB);
      report(`server RSS with all ${streams} pushes open, each after its first 64 KiB`, 'MiB', shuffleRun.allOpen / MiB, `bare node:http server with all ${streams} PUTs open`, bareRun.allOpen / MiB);
      reachedRows.push([`  (streams open at once, ${streams} started)`, `${shuffleRun.reached} of ${streams} (activeStreams)`, `${bareRun.reached} of ${streams} (PUTs receiving)`, '', '']);
      await client.releaseJob(shuffle.url, token, job, false);
    }
    out.row('  (idle RSS before)', `${round(idleShuffle / MiB, 1)} MiB`, `${round(idleBare / MiB, 1)} MiB`, '', '');
    for (const row of reachedRows) out.row(...row);
  } finally {
    await Promise.allSettled([client.close(), raw.close()]);
    await Promise.allSettled([shuffle.stop(), structural.stop(), bare.stop()]);
    await dir.remove();
  }
  const cpu = cpus()[0]?.model ?? 'unknown cpu';
  out.print(`shuffle server on loopback: ${cpus().length} x ${cpu}, node ${process.version}; medians of ${ROUNDS} rounds (1 MB = 10^6 bytes)`, [
    'figure',
    'shuffle server',
    'baseline',
    'baseline is',
    'ratio',
  ]);
}

await main();
