// The upstream backup of a PIPELINED_APPROXIMATE subpartition (ApproximateReplayLog): records framed by
// the real RecordFramer into small buffers (most records span two), the log fed as a subpartition feeds it,
// and what it replays deframed and compared with the records written — an oracle independent of the log.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { ApproximateCleanup, ApproximateReplayLog, RecordDeframer, RecordFramer, type ReplayedBuffer, isShuffleError, resumeReader, validateResumeFrom } from '@weft/shuffle-api';

const SIZE = 16;
/** Record `i`: its index as text, padded so records vary in length (5..13 bytes framed). */
const record = (i: number): Uint8Array => new TextEncoder().encode(`r${i}`.padEnd(1 + (i % 9), '.'));

/**
 * A log and the cleanup counting records, fed `count` records after checkpoint 0's barrier (unless
 * `firstBarrier` is false), a barrier for checkpoint `id` after record `p` per `barriers`.
 */
function write(count: number, limitBytes = 1 << 20, barriers: readonly [id: number, afterRecord: number][] = [], firstBarrier = true, fromStart = false) {
  const log = new ApproximateReplayLog(limitBytes);
  if (fromStart) log.restored();
  if (firstBarrier) log.barrier(0, 0);
  const cleanup = new ApproximateCleanup();
  const framer = new RecordFramer(SIZE, () => new Uint8Array(SIZE), (segment, length, partial) => {
    log.append(segment, length, partial, cleanup.written(segment, length, partial));
  });
  for (let i = 0; i < count; i++) {
    framer.write(record(i));
    for (const [id, after] of barriers) {
      if (after !== i + 1) continue;
      framer.flush();
      log.barrier(id, cleanup.writtenRecords);
    }
  }
  framer.flush();
  return { log, cleanup };
}

/** The records in replayed buffers, as text; each buffer's partialRecordLength checked against the deframer's state. */
function deframe(buffers: readonly ReplayedBuffer[]): string[] {
  const deframer = new RecordDeframer(1 << 20);
  const out: string[] = [];
  for (const { bytes, partialRecordLength } of buffers) {
    assert.equal(partialRecordLength > 0, deframer.hasPartialRecord, 'a buffer starts with a tail exactly when a record is open');
    const records: Uint8Array[] = [];
    deframer.push(bytes, records);
    for (const r of records) out.push(new TextDecoder().decode(r));
  }
  assert.equal(deframer.hasPartialRecord, false, 'the replay ends with a whole record');
  return out;
}

const expected = (from: number, to: number): string[] => Array.from({ length: to - from }, (_, i) => new TextDecoder().decode(record(from + i)));

describe('ApproximateReplayLog', () => {
  it('replays from any record written, the first buffer cut at that record', () => {
    const { log } = write(40);
    for (const from of [0, 1, 7, 20, 39]) assert.deepEqual(deframe(log.from(from) ?? []), expected(from, 40), `from ${from}`);
    assert.equal(log.from(40), undefined, 'nothing written at 40 yet');
    assert.equal(log.from(41), undefined);
  });

  it('keeps from the first record without a barrier once its producer restored a checkpoint (restored)', () => {
    const { log } = write(40, 1 << 20, [], false, true);
    assert.deepEqual(deframe(log.from(0) ?? []), expected(0, 40));
    assert.deepEqual(deframe(log.from(13) ?? []), expected(13, 40));
  });

  it('keeps nothing before the first barrier (a job without checkpoints copies nothing)', () => {
    const { log } = write(40, 1 << 20, [], false);
    assert.equal(log.retainedBytes, 0);
    assert.equal(log.from(0), undefined);
    const later = write(40, 1 << 20, [[1, 10]], false).log;
    assert.equal(later.from(9), undefined, 'before the barrier: not kept');
    assert.deepEqual(deframe(later.from(10) ?? []), expected(10, 40));
  });

  it("a completed checkpoint trims what came before its barrier, and only that", () => {
    const { log } = write(40, 1 << 20, [[1, 10], [2, 25]]);
    const before = log.retainedBytes;
    log.checkpointCompleted(1);
    assert.ok(log.retainedBytes < before, 'something was dropped');
    assert.equal(log.from(9), undefined, 'record 9 came before barrier 1');
    assert.deepEqual(deframe(log.from(10) ?? []), expected(10, 40), 'from the barrier on, kept');
    log.checkpointCompleted(3);
    assert.deepEqual(deframe(log.from(10) ?? []), expected(10, 40), 'an unknown checkpoint trims nothing');
    log.checkpointCompleted(2);
    assert.equal(log.from(24), undefined);
    assert.deepEqual(deframe(log.from(25) ?? []), expected(25, 40));
  });

  it('over its limit it drops the oldest copies: their positions cannot be replayed, the newer ones can', () => {
    const { log } = write(40, 4 * SIZE);
    assert.ok(log.retainedBytes <= 4 * SIZE);
    assert.equal(log.from(0), undefined);
    const kept = [...Array(40).keys()].filter((i) => log.from(i) !== undefined);
    assert.ok(kept.length > 0 && kept.length < 40, `some positions kept: ${kept.join(',')}`);
    for (const from of kept) assert.deepEqual(deframe(log.from(from) ?? []), expected(from, 40));
  });

  it('resumeReader: a replay undoes the counts since the reader went away; without one they stand', () => {
    for (const withLog of [true, false]) {
      const { log, cleanup } = write(30);
      cleanup.readerGone(withLog);
      cleanup.dropped(new Uint8Array(SIZE), SIZE, 0);
      assert.equal(cleanup.losses.recordsDropped > 0, !withLog, 'undecided (not shown) while a replay may come');
      const resumed = resumeReader(cleanup, withLog ? log : undefined, 12);
      assert.equal(resumed?.recordPosition, withLog ? 12 : 30);
      if (withLog) assert.deepEqual(deframe(resumed?.replay ?? []), expected(12, 30));
      else assert.equal(resumed?.replay.length, 0);
      assert.equal(cleanup.losses.reconnects, 1);
      assert.equal(cleanup.losses.recordsDropped > 0, !withLog, JSON.stringify(cleanup.losses));
      assert.equal(cleanup.cleanupRequired, !withLog, 'a replay continues into the live stream: no cut');
    }
  });

  it('validateResumeFrom: one non-negative whole number per channel, else SHF_ERR_INVALID_ARGUMENT naming resumeFrom', () => {
    assert.equal(validateResumeFrom(undefined, 2), undefined);
    assert.deepEqual(validateResumeFrom([0, 5], 2), [0, 5]);
    assert.deepEqual(validateResumeFrom([null, 5], 2), [undefined, 5], 'none for a channel');
    for (const bad of [[1], [1, -1], [1, 1.5], [1, Number.NaN], 'x', [1, '2']]) {
      assert.throws(() => validateResumeFrom(bad, 2), (e: unknown) => isShuffleError(e) && e.code === 'SHF_ERR_INVALID_ARGUMENT' && e.message.includes('resumeFrom'), JSON.stringify(bad));
    }
  });
});
