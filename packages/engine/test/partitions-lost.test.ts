// JobShuffleContext.partitionsLost, end to end through runJob: the blocking shuffle loses two finished
// partitions of one edge at once (a shuffle server holding their only copy died) and names them lost while
// it takes the report of the first reader that failed. One failover re-runs both producers — not one
// failover per lost partition, as each reader finds the next — and never the producer whose partition is
// still there. Job: numbers (3) -ALL_TO_ALL BLOCKING-> sum by key (3).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type JobShuffleContext, type PartitionsLostNotice, type ShuffleFailureReport, type ShuffleMaster, type ShuffleServiceFactory, findShuffleError, resultPartitionId } from '@weft/shuffle-api';
import { defineJob, type JobEvent, runJob } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';
import { testingRecordingBlockingShuffle } from './support/recording-blocking-shuffle.js';

const N = 600;
const KEYS = 7;

const job = defineJob(
  (ctx) => {
    ctx
      .range(0, N, { name: 'numbers', parallelism: 3 })
      .keyBy((i) => i % KEYS)
      .reduce((a, b) => a + b, { name: 'sum', parallelism: 3 })
      .collect('sums');
  },
  { name: 'partitions-lost' },
);

/** Each key's sum, computed without the engine. */
function naiveSums(): number[] {
  const sums = new Map<number, number>();
  for (let i = 0; i < N; i++) sums.set(i % KEYS, (sums.get(i % KEYS) ?? 0) + i);
  return [...sums.values()].sort((a, b) => a - b);
}

interface LosingShuffle {
  readonly factory: ShuffleServiceFactory;
  /** Loses `partitions` now; the master names them lost (all at once) while it takes a report of a reader of one. */
  lose(partitions: readonly string[]): void;
  readonly notices: PartitionsLostNotice[];
  readonly reports: ShuffleFailureReport[];
}

/** The recording shuffle, its master a dead server's would be: a report of a read of a lost partition names every partition lost with it. */
function losingShuffle(options: { tellJob: boolean }): LosingShuffle {
  const inner = testingRecordingBlockingShuffle();
  const master = inner.createShuffleMaster({});
  const lost = new Set<string>();
  const notices: PartitionsLostNotice[] = [];
  const reports: ShuffleFailureReport[] = [];
  let context: JobShuffleContext | undefined;
  const losing: ShuffleMaster = {
    ...master,
    registerJob: async (c) => {
      context = c;
      await master.registerJob(c);
    },
    reportFailure: async (report) => {
      reports.push(report);
      const named = findShuffleError(report.error, 'SHF_ERR_PARTITION_NOT_FOUND')?.context['partitionId'];
      // a short probe of the server, as the server-pool master makes
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (!options.tellJob || typeof named !== 'string' || !lost.has(named) || context?.partitionsLost === undefined) return;
      const notice: PartitionsLostNotice = { jobId: report.jobId, partitions: [...lost].map((id) => ({ partitionId: id as ReturnType<typeof resultPartitionId>, attempt: 0 })), reason: 'testing: the server holding them is gone' };
      notices.push(notice);
      context.partitionsLost(notice);
    },
  };
  return {
    factory: { ...inner, createShuffleMaster: () => losing },
    lose: (partitions) => {
      for (const id of partitions) {
        lost.add(id);
        inner.lose(id);
      }
    },
    notices,
    reports,
  };
}

/** Runs the job; once the three `numbers` tasks finished (before any reader opened them), loses the partitions of #0 and #1. */
async function runLosing(options: { tellJob: boolean; attempts: number }) {
  const shuffle = losingShuffle(options);
  const finished: { task: string; partitions: string[] }[] = [];
  let lostIds: string[] = [];
  const result = await runJob({
    job,
    executor: 'inprocess',
    exchangeMode: 'ALL_EDGES_BLOCKING',
    restartStrategy: { type: 'fixed-delay', attempts: options.attempts, delayMs: 0 },
    shuffle: { pipelined: testingNoShuffleFactory(), blocking: shuffle.factory },
    eventListener: { onJobEvent: (event: JobEvent) => {
      if (event.type !== 'task-finished' || event.data.attempt !== 0 || event.data.partitions.length === 0) return;
      finished.push({ task: event.data.executionVertexId, partitions: event.data.partitions.map((p) => p.partitionId) });
      if (finished.length !== 3) return;
      // taken before the task counts as finished: no reader has opened a partition yet
      lostIds = finished.filter((f) => !f.task.endsWith('#2')).flatMap((f) => f.partitions);
      shuffle.lose(lostIds);
    } },
  });
  return { result, lostIds, shuffle, producers: finished.map((f) => f.task).sort() };
}

describe('partitions the blocking shuffle names lost (JobShuffleContext.partitionsLost)', () => {
  it('one failover re-runs every producer whose partition was lost, and only those', async () => {
    const { result, lostIds, shuffle, producers } = await runLosing({ tellJob: true, attempts: 1 });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual((result.collected['sums'] as number[]).slice().sort((a, b) => a - b), naiveSums());
    assert.equal(lostIds.length, 2, `two partitions lost: ${lostIds.join(', ')}`);
    assert.ok(shuffle.notices.length >= 1, 'the master named them lost');
    assert.equal(result.restarts, 1, JSON.stringify(result.failovers.map((f) => ({ failed: f.failedTask, lost: f.lostPartitions, restart: f.tasksToRestart }))));
    const [failover] = result.failovers;
    assert.deepEqual([...(failover?.lostPartitions ?? [])].sort(), [...lostIds].sort(), 'the failover names both lost partitions');
    const restarted = new Set(failover?.tasksToRestart);
    const [p0, p1, p2] = producers as [string, string, string];
    assert.ok(restarted.has(p0) && restarted.has(p1), `both producers of lost partitions re-run: ${[...restarted].join(', ')}`);
    assert.ok(!restarted.has(p2), `${p2}'s partition was not lost: it does not run again`);
    assert.equal(result.taskAttempts[p2], 0, `${p2} ran once`);
    assert.equal(result.taskAttempts[p0], 1);
  });

  it('without the notice, each reader finds one lost partition: a failover per partition (the behaviour partitionsLost exists to avoid)', async () => {
    const { result } = await runLosing({ tellJob: false, attempts: 5 });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual((result.collected['sums'] as number[]).slice().sort((a, b) => a - b), naiveSums());
    assert.equal(result.restarts, 2);
  });
});
