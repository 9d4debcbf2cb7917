import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type LoggedJobEvent, summarizeJobRun, summarizeUnreadableJobRun } from '@weft/engine';

const lease = { jobId: 'j', epoch: 3, owner: 'h:1', takenAtMs: 5 };
let seq = 0;
const event = (type: string, data: unknown = {}): LoggedJobEvent => ({ v: 1, seq: ++seq, epoch: 1, atMs: 100 + seq, type, data });

describe('summarizeJobRun', () => {
  it('counts a task finished unless a later tasks-reset names it, and a finish after the reset again', () => {
    const run = summarizeJobRun(lease, [
      event('job-submitted', { name: 'wc', tasksTotal: 3 }),
      event('task-finished', { executionVertexId: 'a#0' }),
      event('task-finished', { executionVertexId: 'a#0' }),
      event('task-finished', { executionVertexId: 'b#0' }),
      event('tasks-reset', { tasks: ['a#0', 'b#0'] }),
      event('task-finished', { executionVertexId: 'b#0' }),
    ]);
    assert.deepEqual([run.status, run.jobName, run.tasksTotal, run.tasksFinished, run.events, run.epoch], ['unfinished', 'wc', 3, 1, 6, 3]);
  });

  it('an adaptive run: decided vertices count their decided subtasks; while one is undecided the total is an upper bound', () => {
    // `src` (2, fixed) feeds `sort` (reserved 128, decided at run time): 130 planned
    const submitted = event('job-submitted', { name: 'ts', tasksTotal: 130, topology: { vertices: [{ id: 'src', parallelism: 2 }, { id: 'sort', parallelism: 128 }] } });
    const fixed = event('vertex-initialized', { vertexId: 'src', parallelism: 2 });
    const running = summarizeJobRun(lease, [submitted, fixed, event('task-finished', { executionVertexId: 'src#0' })]);
    assert.deepEqual([running.tasksFinished, running.tasksTotal, running.tasksTotalIsUpperBound], [1, 130, true]);
    const decided = summarizeJobRun(lease, [submitted, fixed, event('vertex-initialized', { vertexId: 'sort', parallelism: 14, decided: true })]);
    assert.deepEqual([decided.tasksTotal, decided.tasksTotalIsUpperBound], [2 + 14, undefined]);
  });

  it('takes the status from the last terminal event, and a later job-submitted (a resume) makes the run unfinished', () => {
    assert.equal(summarizeJobRun(lease, [event('job-submitted'), event('job-failed', { error: 'x' })]).status, 'failed');
    assert.equal(summarizeJobRun(lease, [event('job-submitted'), event('job-cancelled')]).status, 'cancelled');
    assert.equal(summarizeJobRun(lease, [event('job-submitted'), event('job-failed'), event('job-submitted'), event('job-finished')]).status, 'succeeded');
    assert.equal(summarizeJobRun(lease, [event('job-submitted'), event('job-failed'), event('job-submitted')]).status, 'unfinished');
  });

  it('uses the lease time for a run without events, and says why an unreadable run is unreadable', () => {
    const empty = summarizeJobRun(lease, []);
    assert.deepEqual([empty.firstAtMs, empty.lastAtMs, empty.lastType, empty.tasksTotal, empty.status], [5, 5, undefined, undefined, 'unfinished']);
    const bad = summarizeUnreadableJobRun(lease, new Error('written by event format version 2'));
    assert.deepEqual([bad.status, bad.problem, bad.epoch], ['unreadable', 'written by event format version 2', 3]);
  });
});
