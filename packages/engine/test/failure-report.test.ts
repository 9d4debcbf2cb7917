// ShuffleMaster.reportFailure (issue 10): the job master hands every task failure to its blocking
// shuffle master, and a restarted region's partitions are registered only once that report was taken —
// so a master that excludes a dead server never places the restarted producer on it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ShuffleError, type ShuffleFailureReport, type ShuffleMaster, type ShuffleServiceFactory, findShuffleError } from '@weft/shuffle-api';
import { defineJob, runJob } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';
import { testingRecordingBlockingShuffle } from './support/recording-blocking-shuffle.js';

/** Its first `double` attempt fails as a task that could not reach a shuffle server would. */
const job = defineJob(
  (ctx) => {
    ctx
      .range(0, 50, { name: 'numbers', parallelism: 1 })
      .map(
        (i, runtime) => {
          if (runtime.attempt === 0 && i === 7) {
            throw new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', 'connect ECONNREFUSED 127.0.0.2:7070', { context: { server: 'http://127.0.0.2:7070', unreachable: true } });
          }
          return i * 2;
        },
        { name: 'double', parallelism: 1 },
      )
      .keyBy(() => 'all')
      .reduce((a, b) => a + b, { name: 'sum', parallelism: 1 })
      .collect('sum');
  },
  { name: 'reported' },
);

/** The recording shuffle, its master also logging registrations and failure reports (reports taking a while). */
function reportingShuffle(reportDelayMs: number): { factory: ShuffleServiceFactory; log: string[]; reports: ShuffleFailureReport[] } {
  const inner = testingRecordingBlockingShuffle();
  const log: string[] = [];
  const reports: ShuffleFailureReport[] = [];
  const master = inner.createShuffleMaster({});
  const reporting: ShuffleMaster = {
    ...master,
    registerPartitionWithProducer: async (request) => {
      log.push(`register ${request.partition.partitionId} attempt ${request.producer.attempt}`);
      return master.registerPartitionWithProducer(request);
    },
    reportFailure: async (report) => {
      log.push('report begins');
      await new Promise((resolve) => setTimeout(resolve, reportDelayMs));
      reports.push(report);
      log.push('report taken');
    },
  };
  return { factory: { ...inner, createShuffleMaster: () => reporting }, log, reports };
}

describe('failure reports to the shuffle master', () => {
  it("hands the task's failure to reportFailure before the restarted region's partitions are registered", async () => {
    const { factory, log, reports } = reportingShuffle(50);
    const result = await runJob({
      job,
      executor: 'inprocess',
      exchangeMode: 'ALL_EDGES_BLOCKING',
      restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 0 },
      shuffle: { pipelined: testingNoShuffleFactory(), blocking: factory },
    });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(result.collected['sum'], [2 * ((49 * 50) / 2)]);
    assert.equal(reports.length, 1, 'one task failed, one report');
    const report = reports[0] as ShuffleFailureReport;
    assert.equal(report.jobId, result.jobId);
    const cause = findShuffleError(report.error, 'SHF_ERR_STORAGE_UNAVAILABLE');
    assert.ok(cause, `the report carries the task's error, got ${String(report.error)}`);
    assert.equal(cause.context['unreachable'], true);
    assert.equal(cause.context['server'], 'http://127.0.0.2:7070');
    const reRegistered = log.findIndex((line) => / attempt 1$/.test(line));
    assert.ok(reRegistered > 0, `the restarted task registers its partition again: ${log.join('; ')}`);
    assert.ok(log.indexOf('report taken') >= 0 && log.indexOf('report taken') < reRegistered, `report taken before the new registration: ${log.join('; ')}`);
  });

  it('runs the restart even when reportFailure rejects', async () => {
    const { factory } = reportingShuffle(0);
    const master = factory.createShuffleMaster({});
    const rejecting: ShuffleServiceFactory = { ...factory, createShuffleMaster: () => ({ ...master, reportFailure: async () => Promise.reject(new Error('the report failed')) }) };
    const result = await runJob({
      job,
      executor: 'inprocess',
      exchangeMode: 'ALL_EDGES_BLOCKING',
      restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: 0 },
      shuffle: { pipelined: testingNoShuffleFactory(), blocking: rejecting },
    });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.equal(result.restarts, 1);
  });
});
