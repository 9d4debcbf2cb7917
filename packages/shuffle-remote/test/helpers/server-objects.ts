import { connect } from 'node:net';
import { type ShuffleDescriptor, jobId as toJobId } from '@weft/shuffle-api';
import { PartitionFileWriter, SubpartitionRangeReader } from '@weft/shuffle-remote';
import type { FetchResponse } from '@weft/shuffle-remote/client';
import { FetchedRangeReader } from '../../src/client/fetched-range-reader.js';
import { MemoryBlob } from './memory-blob.js';

/** Frames records as FRAMING.md does (4-byte LE length, then the bytes) into one data block payload. */
export function frame(records: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(records.reduce((sum, r) => sum + 4 + r.length, 0));
  let at = 0;
  for (const record of records) {
    new DataView(out.buffer).setUint32(at, record.length, true);
    out.set(record, at + 4);
    at += 4 + record.length;
  }
  return out;
}

export function text(value: string): Uint8Array {
  return new TextEncoder().encode(value);
}

/**
 * A sort-merge data object (the blocking layout, encoded by PartitionFileWriter) holding `regions`, each
 * a list of records per subpartition (one data block per subpartition and region).
 */
export async function encodeObject(
  regions: readonly (readonly (readonly Uint8Array[])[])[],
  compression: 'lz4' | 'none' = 'lz4',
): Promise<{ bytes: Uint8Array; subpartitionBytes: number[] }> {
  const n = regions[0]?.length ?? 1;
  const blob = new MemoryBlob();
  const writer = new PartitionFileWriter({ blob, numberOfSubpartitions: n, compression });
  const subpartitionBytes = new Array<number>(n).fill(0);
  for (const region of regions) {
    const subpartitions = region.map((records, s) => {
      if (records.length === 0) return undefined;
      const bytes = frame(records);
      subpartitionBytes[s]! += bytes.length;
      return [{ kind: 1 as const, bytes }];
    });
    const blocks = subpartitions.filter((x) => x !== undefined).length;
    await writer.writeRegion({ subpartitions, rawBytes: subpartitions.reduce((sum, l) => sum + (l?.[0]?.bytes.length ?? 0), 0), blocks });
  }
  await writer.finish();
  return { bytes: blob.bytes, subpartitionBytes };
}

export function testDescriptor(input: {
  readonly jobId: string;
  readonly partitionId: string;
  readonly attempt: number;
  readonly subpartitions: number;
  readonly token?: string;
  readonly type?: 'BLOCKING' | 'BLOCKING_PERSISTENT';
}): ShuffleDescriptor {
  const [resultId, index] = input.partitionId.split('#') as [string, string];
  return {
    shuffleServiceId: 'shuffle-server',
    jobId: toJobId(input.jobId),
    partition: {
      resultId,
      partitionId: input.partitionId,
      partitionIndex: Number(index),
      partitionType: input.type ?? 'BLOCKING',
      numberOfSubpartitions: input.subpartitions,
    },
    producer: { producerId: `producer#${index}@${input.attempt}`, attempt: input.attempt, taskExecutorId: 'test' },
    details: { serverId: 'test', url: 'http://127.0.0.1:1', token: input.token ?? 'none' },
  } as unknown as ShuffleDescriptor;
}

/** Decodes a fetch response into the records of each subpartition of [start, end] (as strings). */
export async function fetchedRecords(response: FetchResponse, start: number, end: number, partitionId = 'p#0'): Promise<string[][]> {
  const reader = new FetchedRangeReader({ body: response.body, location: response.location, start, end, partitionId });
  const range = await SubpartitionRangeReader.open({ reader, location: response.location, start, end, readBufferBytes: 64 * 1024, partitionId });
  const out: string[][] = Array.from({ length: end - start + 1 }, () => []);
  for (let blocks = await range.next(); blocks !== null; blocks = await range.next()) {
    for (const block of blocks) {
      const view = new DataView(block.payload.buffer, block.payload.byteOffset, block.payload.byteLength);
      for (let at = 0; at < block.payload.length; ) {
        const length = view.getUint32(at, true);
        out[block.subpartition - start]!.push(new TextDecoder().decode(block.payload.subarray(at + 4, at + 4 + length)));
        at += 4 + length;
      }
    }
  }
  if (!(await reader.finished())) throw new Error('the fetch stream held bytes past its last extent');
  await reader.close();
  return out;
}

/** What a raw HTTP/1.1 exchange over a socket returned: status, headers and body (JSON when it parses). */
export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

/**
 * Sends raw bytes to `url` over a fresh socket and resolves with the first complete HTTP response (then
 * drops the socket). The socket is never half-closed: Node's HTTP server takes a client's FIN as an abort.
 * Lets a test send what no HTTP client would: lies about lengths, truncated chunks, raw paths.
 */
export async function rawExchange(url: string, payload: readonly (string | Uint8Array)[], deadlineMs = 20_000): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const chunks: Buffer[] = [];
  let response: RawResponse | undefined;
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve();
    }, deadlineMs);
    const finish = (): void => {
      clearTimeout(timer);
      resolve();
    };
    socket.on('data', (data) => {
      chunks.push(data);
      response = parse(Buffer.concat(chunks));
      if (response !== undefined) {
        socket.destroy();
        finish();
      }
    });
    socket.on('close', finish);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  for (const part of payload) {
    if (socket.destroyed) break;
    if (!socket.write(part)) await new Promise((resolve) => socket.once('drain', resolve).once('close', resolve));
  }
  await done;
  if (response === undefined) throw new Error(`no complete HTTP response: ${JSON.stringify(Buffer.concat(chunks).toString('latin1').slice(0, 200))}`);
  return response;
}

function parse(bytes: Buffer): RawResponse | undefined {
  const text = bytes.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const bodyText = bytes.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1')).toString('utf8');
  if (Buffer.byteLength(bodyText) < length) return undefined;
  let body: unknown = bodyText;
  try {
    body = JSON.parse(bodyText.slice(0, length));
  } catch {
    // not JSON
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body };
}

/** Polls `check` until it returns true (no timing assertion: only a generous deadline against hangs). */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, deadlineMs = 20_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (let delay = 5; !(await check()); delay = Math.min(delay * 2, 200)) {
    if (Date.now() > until) throw new Error(`gave up waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
