import { strict as assert } from 'node:assert';
import { isShuffleError, type ShuffleError } from '../shuffle-error.js';
import type { ShuffleErrorCode } from '../error-codes.js';
import { resultPartitionTypeProperties, type ResultPartitionType } from '../result-partition-type.js';
import type { ShuffleDescriptor } from '../shuffle-descriptor.js';
import type { SubpartitionRange } from '../subpartition-range.js';
import type { InputChannelInfo } from '../input-gate.js';
import type { ConformanceHarness, ConformanceOptions } from './harness.js';
import { type ChannelItem, type DrainOptions, drain, emitAll, makeRecord, parseRecord, recordsOf, registerPartition } from './exchange-helpers.js';

/** What every case file receives: the options, and helpers bound to them. */
export interface SuiteContext {
  readonly options: Required<ConformanceOptions>;
  /** Runs `body` with a fresh harness, closing it afterwards whatever happens. */
  withHarness(body: (h: ConformanceHarness) => Promise<void>): Promise<void>;
}

let jobCounter = 0;
/** A job id unique within this process, so suites sharing a backend never collide. */
export function uniqueJobId(label: string): string {
  jobCounter += 1;
  return `conformance-${label}-${process.pid}-${Date.now().toString(36)}-${jobCounter}`;
}

export function isPipelined(type: ResultPartitionType): boolean {
  return resultPartitionTypeProperties(type).canBePipelined;
}

export function isReconsumable(type: ResultPartitionType): boolean {
  return resultPartitionTypeProperties(type).reconsumable;
}

export interface ExchangePlan {
  readonly jobId: string;
  readonly resultId: string;
  readonly type: ResultPartitionType;
  readonly producers: number;
  readonly subpartitions: number;
  readonly emitsOf: (producer: number) => Iterable<{ readonly subpartition: number | 'all'; readonly record: Uint8Array }>;
  /** Each gate: which producers it reads and which subpartitions of each. */
  readonly gates: readonly { readonly producers: readonly number[]; readonly range: SubpartitionRange }[];
  readonly drainOptions?: DrainOptions;
}

export interface ExchangeResult {
  readonly descriptors: readonly ShuffleDescriptor[];
  /** Per gate, per channel, the items in order. */
  readonly gates: readonly (readonly ChannelItem[][])[];
  /** Per gate, its `channels`. */
  readonly channelInfos: readonly (readonly InputChannelInfo[])[];
}

/**
 * Runs one exchange the way a scheduler would: pipelined types with producers and consumers running
 * together, blocking types with every producer finished before any consumer starts.
 */
export async function runExchange(h: ConformanceHarness, plan: ExchangePlan): Promise<ExchangeResult> {
  const descriptors: ShuffleDescriptor[] = [];
  for (let p = 0; p < plan.producers; p++) {
    descriptors.push(
      await registerPartition(h.master, {
        jobId: plan.jobId,
        resultId: plan.resultId,
        index: p,
        type: plan.type,
        subpartitions: plan.subpartitions,
      }),
    );
  }
  const produce = async (): Promise<void> => {
    await Promise.all(
      descriptors.map(async (descriptor, p) => {
        const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
        try {
          await emitAll(writer, plan.emitsOf(p));
          await writer.finish();
        } finally {
          await writer.close();
        }
      }),
    );
  };
  const channelInfos: (readonly InputChannelInfo[])[] = [];
  const consume = async (): Promise<ChannelItem[][][]> =>
    Promise.all(
      plan.gates.map(async (g, index) => {
        const gate = await h.consumerEnvironment.createInputGate({
          jobId: descriptors[0]!.jobId,
          inputs: g.producers.map((p) => descriptors[p]!),
          subpartitions: g.range,
        });
        channelInfos[index] = gate.channels;
        try {
          return await drain(gate, plan.drainOptions);
        } finally {
          await gate.close();
        }
      }),
    );
  if (isPipelined(plan.type)) {
    const [, gates] = await Promise.all([produce(), consume()]);
    return { descriptors, gates, channelInfos };
  }
  await produce();
  const gates = await consume();
  return { descriptors, gates, channelInfos };
}

/** Asserts `error` is a ShuffleError with `code` (and, when given, about `partitionId`). */
export function assertShuffleError(error: unknown, code: ShuffleErrorCode, partitionId?: string): asserts error is ShuffleError {
  assert.ok(isShuffleError(error), `expected a ShuffleError with code ${code}, got ${String(error)}`);
  assert.equal(error.code, code, `expected ${code}, got ${error.code}: ${error.message}`);
  if (partitionId !== undefined) {
    assert.equal(error.context['partitionId'], partitionId, `error should name partition ${partitionId}: ${error.message}`);
  }
}

/** Asserts `error` is SHF_ERR_INVALID_ARGUMENT whose message or context names `field`. */
export function assertInvalidArgument(error: unknown, field: string): void {
  assertShuffleError(error, 'SHF_ERR_INVALID_ARGUMENT');
  const named = String(error.context['field'] ?? '') + ' ' + error.message;
  assert.ok(named.includes(field), `error should name the field ${field}: ${error.message}`);
}

/** Counts of the resource kinds that outlive a test when leaked. */
export function activeResourceCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) {
    if (kind === 'TTYWrap' || kind === 'PipeWrap' || kind === 'FSReqCallback' || kind === 'FSReqPromise') continue;
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return counts;
}

export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Writes `records` records (64-byte payloads, round robin over the subpartitions) and finishes. */
export async function writeFinished(h: ConformanceHarness, descriptor: ShuffleDescriptor, records: number): Promise<void> {
  const writer = await h.producerEnvironment.createResultPartitionWriter({ descriptor });
  try {
    await emitAll(writer, Array.from({ length: records }, (_, seq) => ({ subpartition: seq % descriptor.partition.numberOfSubpartitions, record: makeRecord(0, seq % descriptor.partition.numberOfSubpartitions, seq, 64) })));
    await writer.finish();
  } finally {
    await writer.close();
  }
}

/** Reads every subpartition of `descriptor` to the end; the records' sequence numbers. */
export async function readAll(h: ConformanceHarness, descriptor: ShuffleDescriptor): Promise<number[]> {
  const gate = await h.consumerEnvironment.createInputGate({
    jobId: descriptor.jobId,
    inputs: [descriptor],
    subpartitions: { start: 0, end: descriptor.partition.numberOfSubpartitions - 1 },
  });
  try {
    return (await drain(gate)).flatMap((items) => recordsOf(items).map((r) => parseRecord(r).seq));
  } finally {
    await gate.close();
  }
}

/** The messages of `error` and its cause chain. */
export function causeMessages(error: unknown): string[] {
  const out: string[] = [];
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 16; e = (e as { cause?: unknown }).cause, depth++) {
    out.push(String((e as { message?: unknown }).message ?? e));
  }
  return out;
}
