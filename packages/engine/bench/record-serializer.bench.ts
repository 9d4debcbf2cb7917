// The default record serializer against the JSON one (JSON.stringify + TextEncoder, TextDecoder +
// JSON.parse), both measured in this run on the same records: word-count pairs, TPC-H-like customer rows
// and terasort lines. Encoding writes every record into one segment, as a shuffle writer copies them;
// decoding reads every record back from views into that segment, as a task reads a shuffle batch.
// Figures: ns per record to encode, to decode, and bytes per record (lower is better; ratio = default / JSON).
import assert from 'node:assert/strict';
import { BenchReport } from '@weft/testkit';
import { DefaultRecordSerializer, JsonRecordSerializer, type RecordSerializer } from '@weft/engine';

const BENCH = 'engine/record-serializer';
const BASELINE = 'JSON serializer (JSON.stringify + TextEncoder / TextDecoder + JSON.parse)';
const RUNS = 5;
const out = new BenchReport(BENCH);

function report(metric: string, unit: string, value: number, baselineValue: number): void {
  out.report(metric, unit, value, BASELINE, baselineValue);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** A deterministic generator (LCG), so every run measures the same records. */
function random(seed: number): () => number {
  let x = seed >>> 0;
  return () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

function wordPairs(count: number): unknown[] {
  const next = random(1);
  const vocabulary = Array.from({ length: 5000 }, (_, i) => `${i.toString(36)}${'abcdefghij'.slice(0, 2 + (i % 8))}${i % 17 === 0 ? 'é' : ''}`);
  return Array.from({ length: count }, () => [vocabulary[Math.floor(next() * vocabulary.length)], 1 + Math.floor(next() * 1000)]);
}

function customerRows(count: number): unknown[] {
  const next = random(2);
  const segments = ['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'];
  return Array.from({ length: count }, (_, i) => ({
    custkey: i + 1,
    name: `Customer#${String(i + 1).padStart(9, '0')}`,
    nationkey: Math.floor(next() * 25),
    acctbal: Math.round((next() * 11_000 - 1000) * 100) / 100,
    mktsegment: segments[Math.floor(next() * segments.length)],
  }));
}

function terasortLines(count: number): unknown[] {
  const next = random(3);
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  return Array.from({ length: count }, (_, i) => {
    let key = '';
    for (let k = 0; k < 10; k++) key += letters[Math.floor(next() * 26)];
    return `${key}\t${String(i).padStart(32, '0')}${'0123456789ABCDEF'.repeat(4).slice(0, 57)}`;
  });
}

interface Encoded {
  readonly segment: Uint8Array;
  readonly offsets: Uint32Array;
}

/** Serializes every record into one segment (a copy per record, as a shuffle writer makes). */
function encodeAll(serializer: RecordSerializer, records: readonly unknown[], capacity: number): Encoded {
  const segment = new Uint8Array(capacity);
  const offsets = new Uint32Array(records.length + 1);
  let at = 0;
  for (let i = 0; i < records.length; i++) {
    const bytes = serializer.serialize(records[i]);
    segment.set(bytes, at);
    at += bytes.length;
    offsets[i + 1] = at;
  }
  return { segment: segment.subarray(0, at), offsets };
}

/** Deserializes every record from views into the segment; returns them. */
function decodeAll(serializer: RecordSerializer, encoded: Encoded, count: number): unknown[] {
  const out = new Array<unknown>(count);
  const { segment, offsets } = encoded;
  for (let i = 0; i < count; i++) out[i] = serializer.deserialize(segment.subarray(offsets[i] as number, offsets[i + 1] as number));
  return out;
}

interface Measured {
  readonly encodeNs: number;
  readonly decodeNs: number;
  readonly bytesPerRecord: number;
}

/**
 * Both serializers on the same records, their runs interleaved (default, JSON, default, …) so that a
 * machine busy with something else slows both alike; medians of RUNS after a checked warm-up.
 */
function measureBoth(serializers: readonly RecordSerializer[], records: readonly unknown[]): Measured[] {
  const capacity = 8 * JSON.stringify(records).length;
  const encoded = serializers.map((serializer) => {
    const warm = encodeAll(serializer, records, capacity);
    assert.deepEqual(decodeAll(serializer, warm, records.length), records, `${serializer.name} round-trips every record`);
    return warm;
  });
  const encodeSamples = serializers.map((): number[] => []);
  const decodeSamples = serializers.map((): number[] => []);
  for (let run = 0; run < RUNS; run++) {
    serializers.forEach((serializer, k) => {
      let start = performance.now();
      encoded[k] = encodeAll(serializer, records, capacity);
      (encodeSamples[k] as number[]).push(performance.now() - start);
      start = performance.now();
      decodeAll(serializer, encoded[k] as Encoded, records.length);
      (decodeSamples[k] as number[]).push(performance.now() - start);
    });
  }
  const perRecord = (ms: number): number => (ms * 1e6) / records.length;
  return serializers.map((_, k) => ({
    encodeNs: perRecord(median(encodeSamples[k] as number[])),
    decodeNs: perRecord(median(decodeSamples[k] as number[])),
    bytesPerRecord: (encoded[k] as Encoded).segment.length / records.length,
  }));
}

const datasets: [name: string, records: unknown[]][] = [
  ['word-count pairs ["word", n]', wordPairs(500_000)],
  ['TPC-H-like customer rows (objects)', customerRows(200_000)],
  ['terasort lines (100-char strings)', terasortLines(200_000)],
];

const rows: [string, string][] = [];
for (const [name, records] of datasets) {
  const [fast, json] = measureBoth([new DefaultRecordSerializer(), new JsonRecordSerializer()], records) as [Measured, Measured];
  rows.push(
    [`${name}, ${records.length.toLocaleString('en-US')} records`, ''],
    ['  encode, ns/record: default | json', `${fast.encodeNs.toFixed(0)} | ${json.encodeNs.toFixed(0)}  (×${(fast.encodeNs / json.encodeNs).toFixed(2)})`],
    ['  decode, ns/record: default | json', `${fast.decodeNs.toFixed(0)} | ${json.decodeNs.toFixed(0)}  (×${(fast.decodeNs / json.decodeNs).toFixed(2)})`],
    ['  size, bytes/record: default | json', `${fast.bytesPerRecord.toFixed(1)} | ${json.bytesPerRecord.toFixed(1)}  (×${(fast.bytesPerRecord / json.bytesPerRecord).toFixed(2)})`],
  );
  report(`encode, ${name} (median of ${RUNS})`, 'ns/record', fast.encodeNs, json.encodeNs);
  report(`decode, ${name} (median of ${RUNS})`, 'ns/record', fast.decodeNs, json.decodeNs);
  report(`size, ${name}`, 'bytes/record', fast.bytesPerRecord, json.bytesPerRecord);
}

const width = Math.max(...rows.map(([k]) => k.length));
console.log(rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n'));
out.printFigures();
