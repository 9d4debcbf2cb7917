import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import {
  type ShuffleEvent,
  ShuffleError,
  decodeEvent,
  deserializeError,
  encodeEvent,
  findShuffleError,
  isShuffleError,
  pointwiseConsumersOf,
  pointwiseProducersOf,
  resultPartitionTypeProperties,
  serializeError,
  validateId,
  validateShuffleDescriptor,
  validateUserEvent,
} from '@weft/shuffle-api';

describe('events', () => {
  it('round-trips every event kind through its encoding', () => {
    const events: ShuffleEvent[] = [
      { type: 'end-of-partition' },
      { type: 'end-of-data' },
      { type: 'checkpoint-barrier', id: 12345678901, timestampMs: 1_700_000_000_001 },
      { type: 'user', name: 'watermark', payload: { at: [1, 'two', null] } },
      { type: 'channel-unavailable', partialRecordBytes: 17 },
      { type: 'channel-resumed', recordPosition: 2 ** 40 + 3 },
    ];
    for (const event of events) assert.deepEqual(decodeEvent(encodeEvent(event)), event);
    // FRAMING.md's table: kind 6, then the position as float64 LE
    assert.deepEqual([...encodeEvent({ type: 'channel-resumed', recordPosition: 1 })], [6, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
  });

  it('refuses to broadcast the events only the shuffle sends, naming event.type', () => {
    for (const event of [{ type: 'channel-unavailable', partialRecordBytes: 0 }, { type: 'channel-resumed', recordPosition: 0 }, { type: 'end-of-partition' }] as ShuffleEvent[]) {
      assert.throws(() => validateUserEvent(event), (e: unknown) => isShuffleError(e, 'SHF_ERR_INVALID_ARGUMENT') && e.context['field'] === 'event.type', event.type);
    }
  });

  it('refuses a user event whose payload JSON cannot carry unchanged, naming event.payload', () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle['self'] = cycle;
    const shared = { n: 1 };
    const bad: [string, unknown][] = [
      ['BigInt', 10n],
      ['nested BigInt', { a: [1, { b: 2n }] }],
      ['cycle', cycle],
      ['cycle through an array', (() => { const a: unknown[] = []; a.push({ a }); return a; })()],
      ['function', () => 1],
      ['undefined', undefined],
      ['nested undefined', { a: undefined }],
      ['undefined in an array', [1, undefined]],
      ['symbol', Symbol('s')],
      ['NaN', Number.NaN],
      ['Infinity', { at: Number.POSITIVE_INFINITY }],
      ['Date', new Date(0)],
      ['Map', new Map([[1, 2]])],
      ['bytes', new Uint8Array(2)],
      ['nested too deep', JSON.parse('['.repeat(300) + ']'.repeat(300))],
    ];
    for (const [label, payload] of bad) {
      const event = { type: 'user', name: 'x', payload } as unknown as ShuffleEvent;
      assert.throws(
        () => validateUserEvent(event),
        (e: unknown) => isShuffleError(e, 'SHF_ERR_INVALID_ARGUMENT') && e.context['field'] === 'event.payload',
        `should refuse a payload with ${label}`,
      );
    }
    const good = { type: 'user', name: 'x', payload: { n: -1.5, s: 'é', list: [null, true, shared, shared], o: Object.create(null) } } as ShuffleEvent;
    assert.equal(validateUserEvent(good), good, 'the same object twice (no cycle), null-prototype objects and finite numbers are fine');
    assert.deepEqual(decodeEvent(encodeEvent(good)), JSON.parse(JSON.stringify(good)));
  });

  it('reports unknown kinds, short barriers and bad JSON as corruption', () => {
    for (const bytes of [Uint8Array.of(99), Uint8Array.of(3, 1, 2), Uint8Array.of(4, 0x7b), Uint8Array.of(6, 1, 2, 3)]) {
      assert.throws(() => decodeEvent(bytes), (e: unknown) => isShuffleError(e, 'SHF_ERR_DATA_CORRUPTED'));
    }
  });
});

describe('ids', () => {
  it('refuses path separators, "..", control characters, empty and overlong ids, naming the field', () => {
    for (const bad of ['a/b', 'a\\b', '..', 'x..y', 'nul\u0000', 'tab\t', 'del\u007f', 'nel\u0085', 'c1\u009f', 'ls\u2028', '', 'x'.repeat(513), 42]) {
      assert.throws(
        () => validateId('jobId', bad),
        (e: unknown) => isShuffleError(e, 'SHF_ERR_INVALID_ARGUMENT') && e.context['field'] === 'jobId',
        `should refuse ${JSON.stringify(bad)}`,
      );
    }
    assert.equal(validateId('jobId', 'word-count_2026.11#3@1'), 'word-count_2026.11#3@1');
    assert.equal(validateId('jobId', 'zählen-\u00a0-счёт'), 'zählen-\u00a0-счёт', 'printable non-ASCII stays allowed');
  });

  it('validates descriptors field by field', () => {
    const good = {
      shuffleServiceId: 'memory',
      jobId: 'j',
      partition: { resultId: 'a->b', partitionId: 'a->b#0', partitionIndex: 0, partitionType: 'BLOCKING', numberOfSubpartitions: 2 },
      producer: { producerId: 'a#0@0', attempt: 0, taskExecutorId: 'te' },
      details: null,
    };
    assert.equal(validateShuffleDescriptor(good), good);
    const field = (value: unknown, expected: string): void => {
      assert.throws(() => validateShuffleDescriptor(value, 'memory'), (e: unknown) => isShuffleError(e) && e.context['field'] === expected);
    };
    field({ ...good, shuffleServiceId: 'remote' }, 'descriptor.shuffleServiceId');
    field({ ...good, partition: { ...good.partition, partitionIndex: -1 } }, 'descriptor.partition.partitionIndex');
    field({ ...good, producer: { ...good.producer, attempt: 'x' } }, 'descriptor.producer.attempt');
    // partitionId is "<resultId>#<partitionIndex>" (DESIGN.md), nothing else
    for (const partitionId of ['a->b#1', 'other#0', 'a->b', 'a->b#00', 'a->b#0 ']) {
      field({ ...good, partition: { ...good.partition, partitionId } }, 'descriptor.partition.partitionId');
    }
    field({ ...good, partition: { ...good.partition, partitionIndex: 3 } }, 'descriptor.partition.partitionId');
    field({ ...good, partition: { ...good.partition, resultId: 'a->c' } }, 'descriptor.partition.partitionId');
    const third = { ...good, partition: { ...good.partition, partitionId: 'a->b#2', partitionIndex: 2 } };
    assert.equal(validateShuffleDescriptor(third), third);
  });
});

describe('partition types', () => {
  it('has Flink\'s properties: pipelined types join regions, blocking types are re-readable', () => {
    assert.equal(resultPartitionTypeProperties('PIPELINED').mustBePipelined, true);
    assert.equal(resultPartitionTypeProperties('PIPELINED_BOUNDED').bounded, true);
    assert.equal(resultPartitionTypeProperties('PIPELINED_APPROXIMATE').mustBePipelined, false);
    assert.equal(resultPartitionTypeProperties('BLOCKING').reconsumable, true);
    assert.equal(resultPartitionTypeProperties('BLOCKING_PERSISTENT').persistent, true);
    assert.equal(resultPartitionTypeProperties('HYBRID_FULL').reconsumable, true);
    assert.equal(resultPartitionTypeProperties('HYBRID_SELECTIVE').reconsumable, false);
    assert.throws(() => resultPartitionTypeProperties('NOPE' as never), (e: unknown) => isShuffleError(e, 'SHF_ERR_INVALID_ARGUMENT'));
  });
});

describe('pointwise distribution', () => {
  it('follows DESIGN.md and is consistent in both directions for every S, T up to 12', () => {
    for (let S = 1; S <= 12; S++) {
      for (let T = 1; T <= 12; T++) {
        const fed: number[][] = Array.from({ length: T }, () => []);
        for (let i = 0; i < S; i++) {
          const r = pointwiseConsumersOf(i, S, T);
          if (S === T) assert.deepEqual(r, { start: i, end: i + 1 });
          if (S < T) assert.deepEqual(r, { start: Math.floor((i * T + S - 1) / S), end: Math.floor(((i + 1) * T + S - 1) / S) });
          for (let j = r.start; j < r.end; j++) fed[j]!.push(i);
        }
        for (let j = 0; j < T; j++) {
          const r = pointwiseProducersOf(j, S, T);
          if (S > T) assert.deepEqual(r, { start: Math.floor((j * S) / T), end: Math.floor(((j + 1) * S) / T) });
          assert.deepEqual(fed[j], Array.from({ length: r.end - r.start }, (_, k) => r.start + k), `S=${S} T=${T} consumer ${j}`);
        }
      }
    }
  });
});

describe('errors across processes', () => {
  it('serializes and rebuilds a shuffle error with its code, context and cause chain', () => {
    const original = new ShuffleError('SHF_ERR_PRODUCER_FAILED', 'producer of p#0 failed', {
      cause: new TypeError('x is not a function'),
      context: { partitionId: 'p#0' },
    });
    const rebuilt = deserializeError(JSON.parse(JSON.stringify(serializeError(original))));
    assert.ok(isShuffleError(rebuilt, 'SHF_ERR_PRODUCER_FAILED'));
    assert.equal(rebuilt.context['partitionId'], 'p#0');
    assert.equal((rebuilt.cause as Error).message, 'x is not a function');
    assert.equal((rebuilt.cause as Error).name, 'TypeError');
    assert.equal(findShuffleError(new Error('wrapper', { cause: rebuilt }), 'SHF_ERR_PRODUCER_FAILED'), rebuilt);
  });

  it("keeps a system error's code and failed system call (a report can tell an I/O fault from a bug)", async () => {
    const { mkdir } = await import('node:fs/promises');
    const system = await mkdir('/dev/null/x', { recursive: true }).then(() => undefined, (error: unknown) => error);
    const rebuilt = deserializeError(JSON.parse(JSON.stringify(serializeError(new Error('wrapper', { cause: system })))));
    const cause = rebuilt.cause as Error & { code?: string; syscall?: string };
    assert.deepEqual([cause.code, cause.syscall], ['ENOTDIR', 'mkdir']);
  });
});
