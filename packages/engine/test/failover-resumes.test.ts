// FailoverResumes: when a failover's failed task, and when all of its restarted tasks, read again — against
// hand-computed times from a settable clock.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FailoverRecord } from '../src/job-master/failover-record.js';
import { FailoverResumes } from '../src/job-master/failover-resumes.js';

const record = (attemptId: string, tasksToRestart: readonly string[]): FailoverRecord =>
  ({ atMs: 0, failedTask: attemptId.slice(0, attemptId.lastIndexOf('@')), attemptId, error: { message: 'boom' }, lostPartitions: [], strategy: 'region', tasksToRestart, tasksRunAgain: tasksToRestart, tasksTotal: tasksToRestart.length, tasksDeployed: tasksToRestart.length, backoffMs: 0 }) as FailoverRecord;

describe('FailoverResumes', () => {
  it('ends a single-task recovery when the new attempt reads: both figures are its reading', () => {
    let now = 100;
    const resumes = new FailoverResumes(() => now);
    resumes.failedOver(record('count#0@0', ['count#0']), ['count#0@0']);
    assert.deepEqual(resumes.records(), [{ failedTask: 'count#0', attemptId: 'count#0@0', tasksRestarted: 1 }], 'nothing read yet');
    now = 200; // the job master's clock does not matter to a reading: the report carries its own stamp
    resumes.reading('count#0@1', 103.5);
    assert.deepEqual(resumes.records(), [{ failedTask: 'count#0', attemptId: 'count#0@0', resumedAfterMs: 3.5, tasksRestarted: 1, allResumedAfterMs: 3.5, lastResumedTask: 'count#0' }]);
  });

  it('ends a whole-job restart at the last restarted task to read, not at the failed one', () => {
    let now = 1000;
    const resumes = new FailoverResumes(() => now);
    // the source is reported lost first (its worker died), but count#0 on the same worker resumes last
    resumes.failedOver(record('generate#0@0', ['generate#0', 'count#0', 'count#1']), ['generate#0@0', 'count#0@0', 'count#1@0']);
    now = 1001;
    resumes.reading('generate#0@1', 1004);
    resumes.reading('count#1@1', 1010);
    assert.deepEqual(resumes.records(), [{ failedTask: 'generate#0', attemptId: 'generate#0@0', resumedAfterMs: 4, tasksRestarted: 3 }], 'count#0 has not read: not all resumed');
    resumes.reading('count#0@1', 1023);
    resumes.reading('count#0@1', 1030); // a second report of the same attempt changes nothing
    assert.deepEqual(resumes.records(), [{ failedTask: 'generate#0', attemptId: 'generate#0@0', resumedAfterMs: 4, tasksRestarted: 3, allResumedAfterMs: 23, lastResumedTask: 'count#0' }]);
  });

  it('takes the finish of a restarted attempt that never read (nothing was left for it) as its resumption, by the job master clock', () => {
    let now = 50;
    const resumes = new FailoverResumes(() => now);
    resumes.failedOver(record('b#0@2', ['a#0', 'b#0']), ['a#0@1', 'b#0@2']);
    resumes.reading('b#0@3', 52);
    now = 60;
    resumes.reading('a#0@2', 57);
    resumes.finished('a#0@2'); // finished after it read: the reading stands
    assert.equal(resumes.records()[0]?.allResumedAfterMs, 7);

    const other = new FailoverResumes(() => now);
    now = 50;
    other.failedOver(record('b#0@2', ['a#0', 'b#0']), ['a#0@1', 'b#0@2']);
    other.reading('b#0@3', 52);
    now = 75;
    other.finished('a#0@2');
    now = 90;
    other.finished('a#0@2'); // once
    assert.deepEqual(other.records(), [{ failedTask: 'b#0', attemptId: 'b#0@2', resumedAfterMs: 2, tasksRestarted: 2, allResumedAfterMs: 25, lastResumedTask: 'a#0' }]);
  });

  it('waits for the next attempt only: an attempt that failed before reading leaves its failover open, the next failover waits for the one after', () => {
    let now = 10;
    const resumes = new FailoverResumes(() => now);
    resumes.failedOver(record('count#0@0', ['count#0']), ['count#0@0']);
    now = 20;
    resumes.failedOver(record('count#0@1', ['count#0']), ['count#0@1']);
    resumes.reading('count#0@2', 26);
    resumes.finished('count#0@0'); // an attempt no failover waits for
    assert.deepEqual(resumes.records(), [
      { failedTask: 'count#0', attemptId: 'count#0@0', tasksRestarted: 1 },
      { failedTask: 'count#0', attemptId: 'count#0@1', resumedAfterMs: 6, tasksRestarted: 1, allResumedAfterMs: 6, lastResumedTask: 'count#0' },
    ]);
  });

  it('lists the awaited attempts that neither read nor finished yet', () => {
    const resumes = new FailoverResumes(() => 0);
    assert.deepEqual(resumes.unresolved(), []);
    resumes.failedOver(record('generate#0@0', ['generate#0', 'count#0', 'count#1']), ['generate#0@0', 'count#0@1', 'count#1@0']);
    assert.deepEqual(resumes.unresolved().sort(), ['count#0@2', 'count#1@1', 'generate#0@1']);
    resumes.reading('generate#0@1', 1);
    resumes.finished('count#1@1');
    resumes.reading('count#0@1', 1); // not awaited: the failed-over attempt itself
    assert.deepEqual(resumes.unresolved(), ['count#0@2']);
    resumes.reading('count#0@2', 2);
    assert.deepEqual(resumes.unresolved(), []);
  });

  it('counts a reading stamped before the failover (another host clock behind) as 0, not negative', () => {
    const resumes = new FailoverResumes(() => 500);
    resumes.failedOver(record('count#1@0', ['count#1']), ['count#1@0']);
    resumes.reading('count#1@1', 498.25);
    assert.equal(resumes.records()[0]?.resumedAfterMs, 0);
    assert.equal(resumes.records()[0]?.allResumedAfterMs, 0);
  });
});
