import type { HybridHashJoinOptions } from './hybrid-hash-join.js';
import { JoinBuildPartition } from './join-build-partition.js';
import { joinKeyHash } from './join-hash.js';
import type { PagePool } from './page-pool.js';
import { SpillRunReader } from './spill-run-reader.js';
import type { SpillRun } from './spill-run-writer.js';

export interface BlockNestedLoopJoinRequest {
  readonly options: HybridHashJoinOptions;
  readonly build: SpillRun;
  readonly probe: SpillRun | undefined;
  readonly pool: PagePool;
}

/**
 * The last resort of a hybrid hash join, for a spilled partition hashing cannot split (one key, or keys
 * of one hash code, with more records than the budget holds): the build file is read in blocks that
 * fill the budget (at least one record each), and the whole probe file is streamed past each block.
 * Outer sides stay exact: a block's unmatched build keys are emitted after its pass (all records of a
 * key in a block match the same probe records), and a bit per probe record remembers whether any block
 * matched it, for one more pass over the probe file at the end. Reads the files only; the caller removes
 * them.
 */
export async function blockNestedLoopJoin(request: BlockNestedLoopJoinRequest): Promise<void> {
  const { options: o, build, probe, pool } = request;
  const probeMatched = o.probeOuter && probe !== undefined ? new Uint8Array(Math.ceil(probe.records / 8)) : undefined;
  const reader = new SpillRunReader(build, o.operator);
  const block = new JoinBuildPartition({ consumer: o.consumer, pool });
  try {
    let more = reader.next();
    while (more) {
      while (more) {
        const hash = joinKeyHash(reader.key);
        if (!block.tryAdd(reader.key, reader.value, hash)) {
          if (block.records > 0) break;
          // the budget is held elsewhere (another operator of the task): one record at a time, if it could fit at all
          o.consumer.checkRecordSize(JoinBuildPartition.recordCost(reader.key, reader.value));
          block.tryAdd(reader.key, reader.value, hash, true);
        }
        more = reader.next();
        const wait = o.pause();
        if (wait !== undefined) await wait;
      }
      if (probe !== undefined) await probeBlock(o, block, probe, probeMatched);
      if (o.buildOuter) {
        for (const r of block.unmatched()) {
          o.emit(o.values.deserialize(block.valueAt(r)), null);
          const wait = o.pause();
          if (wait !== undefined) await wait;
        }
      }
      block.release();
    }
    if (probe !== undefined && probeMatched !== undefined) {
      const again = new SpillRunReader(probe, o.operator);
      try {
        for (let i = 0; again.next(); i++) {
          if (((probeMatched[i >>> 3] as number) & (1 << (i & 7))) !== 0) continue;
          o.emit(null, o.values.deserialize(again.value));
          const wait = o.pause();
          if (wait !== undefined) await wait;
        }
      } finally {
        again.close();
      }
    }
  } finally {
    reader.close();
    block.release();
  }
}

async function probeBlock(o: HybridHashJoinOptions, block: JoinBuildPartition, probe: SpillRun, probeMatched: Uint8Array | undefined): Promise<void> {
  const reader = new SpillRunReader(probe, o.operator);
  try {
    for (let i = 0; reader.next(); i++) {
      const last = block.last(reader.key, joinKeyHash(reader.key));
      if (last >= 0) {
        if (o.buildOuter) block.markMatched(last);
        if (probeMatched !== undefined) probeMatched[i >>> 3] = (probeMatched[i >>> 3] as number) | (1 << (i & 7));
        const value = o.values.deserialize(reader.value);
        for (let r = last; r >= 0; r = block.previous(r)) o.emit(o.values.deserialize(block.valueAt(r)), value);
      }
      const wait = o.pause();
      if (wait !== undefined) await wait;
    }
  } finally {
    reader.close();
  }
}
