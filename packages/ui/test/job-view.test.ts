// The UI's JSON, derived from hand-built event logs (no engine run): what each event does to the job page.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobRunRecord, LoggedJobEvent, PublishedJobProgress } from '@weft/engine';
import { foldJobEvents, toJobDetail, toJobListItem, uiJobStatus } from '@weft/ui';

const T0 = 1_700_000_000_000;
const TOPOLOGY = {
  vertices: [
    { id: 'a', parallelism: 2 },
    { id: 'b', parallelism: 2 },
  ],
  edges: [{ id: 'a->b', source: 'a', target: 'b', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' }],
};

/** Events in order; each carries the epoch of the latest job-submitted before it (or its own). */
function log(entries: readonly [number, string, unknown, number?][]): LoggedJobEvent[] {
  let current = 1;
  return entries.map(([at, type, data, epoch], i) => {
    current = epoch ?? current;
    return { v: 1, seq: i + 1, epoch: current, atMs: T0 + at, type, data };
  });
}

const submitted = (at: number, epoch = 1): [number, string, unknown, number] => [
  at,
  'job-submitted',
  { name: 'wc', jobModule: null, jobModuleHash: null, args: [], topology: TOPOLOGY, tasksTotal: 4, vertexNames: { a: 'source -> map', b: 'reduce' }, options: { restartStrategy: { type: 'fixed-delay', attempts: 3, delayMs: 10 } } },
  epoch,
];
/** `executor` null: an event of a weft that did not log it. */
const deployed = (at: number, task: string, attempt = 0, executor: string | null = 'w1'): [number, string, unknown] => [at, 'task-deployed', { executionVertexId: task, attempt, ...(executor === null ? {} : { executor }) }];
const finished = (at: number, task: string, attempt: number, recordsIn: number, out: [number, number][] = []): [number, string, unknown] => [
  at,
  'task-finished',
  { executionVertexId: task, attempt, partitions: [], metrics: { recordsIn, outputs: out.map(([records, bytes]) => ({ edgeIndex: 0, records, bytes })) }, sinks: [], durationMs: 1 },
];

function run(events: LoggedJobEvent[], overrides: Partial<JobRunRecord> = {}): JobRunRecord {
  return { jobId: 'j1', epoch: 1, events: events.length, firstAtMs: events[0]?.atMs ?? T0, lastAtMs: events.at(-1)?.atMs ?? T0, lastType: events.at(-1)?.type, owner: 'h:1', leaseRenewedAtMs: T0, jobName: 'wc', tasksTotal: 4, tasksFinished: 0, status: 'unfinished', problem: undefined, ...overrides };
}

const FAILOVER = { atMs: 30, failedTask: 'b#1', attemptId: 'b#1@0', error: { code: 'WEFT_ERR_INJECTED_FAULT', message: 'injected' }, lostPartitions: [], strategy: 'region', tasksToRestart: ['b#1'], tasksRunAgain: ['b#1'], tasksTotal: 4, tasksDeployed: 4, backoffMs: 10 };

const SUCCEEDED = log([
  submitted(0),
  [1, 'vertex-initialized', { vertexId: 'a', parallelism: 2 }],
  [1, 'vertex-initialized', { vertexId: 'b', parallelism: 2 }],
  deployed(2, 'a#0'),
  deployed(2, 'a#1', 0, 'w2'),
  finished(10, 'a#0', 0, 100, [[100, 1000]]),
  finished(12, 'a#1', 0, 50, [[50, 500]]),
  deployed(13, 'b#0'),
  deployed(13, 'b#1', 0, null),
  finished(20, 'b#0', 0, 70),
  [30, 'failover', FAILOVER],
  [40, 'tasks-reset', { tasks: ['b#1'], reason: 'failover' }],
  deployed(41, 'b#1', 1, 'w2'),
  finished(50, 'b#1', 1, 80),
  [51, 'sink-published', { sink: 'out', path: '/tmp/out' }],
  [52, 'job-finished', {}],
]);

describe('the job page derived from the event log', () => {
  it('draws the graph from job-submitted (names, logged parallelism) with counts of the finished attempts', () => {
    const detail = toJobDetail({ run: run(SUCCEEDED, { status: 'succeeded', tasksFinished: 4 }), events: SUCCEEDED, progress: undefined, nowMs: T0 + 99 });
    assert.deepEqual(detail.vertices, [
      { id: 'a', name: 'source -> map', parallelism: 2, recordsIn: 150, recordsOut: 150, state: 'finished', tasksFinished: 2 },
      { id: 'b', name: 'reduce', parallelism: 2, recordsIn: 150, recordsOut: 0, state: 'finished', tasksFinished: 2 },
    ]);
    assert.deepEqual(detail.edges, [{ id: 'a->b', source: 'a', target: 'b', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING', records: 150, bytes: 1500 }]);
    assert.deepEqual(detail.regions.map((r) => [[...r.tasks].sort(), r.vertices]), [[['a#0'], ['a']], [['a#1'], ['a']], [['b#0'], ['b']], [['b#1'], ['b']]]);
    assert.deepEqual(detail.job, { jobId: 'j1', name: 'wc', status: 'succeeded', epoch: 1, startedAtMs: T0, endedAtMs: T0 + 52, durationMs: 52, tasksTotal: 4, tasksFinished: 4, records: 150, bytes: 1500, failovers: 1, problem: undefined });
    assert.deepEqual(detail.restartStrategy, { options: { type: 'fixed-delay', attempts: 3, delayMs: 10 }, restarts: 1 });
    assert.equal(detail.error, undefined);
    assert.equal(detail.progress, undefined);
  });

  it('lists every attempt with its executor (undefined where the event has none) and how it ended', () => {
    const { attempts } = toJobDetail({ run: run(SUCCEEDED, { status: 'succeeded' }), events: SUCCEEDED, progress: undefined, nowMs: T0 });
    assert.deepEqual(
      attempts.map((a) => [a.task, a.attempt, a.executor, a.startMs, a.endMs, a.state]),
      [
        ['a#0', 0, 'w1', 2, 10, 'finished'],
        ['a#1', 0, 'w2', 2, 12, 'finished'],
        ['b#0', 0, 'w1', 13, 20, 'finished'],
        ['b#1', 0, undefined, 13, 30, 'failed'],
        ['b#1', 1, 'w2', 41, 50, 'finished'],
      ],
    );
  });

  it('shows each failover with its cause and the tasks it restarted', () => {
    const { failovers } = toJobDetail({ run: run(SUCCEEDED, { status: 'succeeded' }), events: SUCCEEDED, progress: undefined, nowMs: T0 });
    assert.deepEqual(failovers, [{ atMs: 30, failedTask: 'b#1', error: { code: 'WEFT_ERR_INJECTED_FAULT', message: 'injected' }, strategy: 'region', tasksToRestart: ['b#1'], tasksRunAgain: ['b#1'], lostPartitions: [], backoffMs: 10 }]);
  });

  it('uses the logged parallelism (vertex-initialized) over the submitted topology for the graph and the regions', () => {
    const events = log([submitted(0), [1, 'vertex-initialized', { vertexId: 'a', parallelism: 1 }], [1, 'vertex-initialized', { vertexId: 'b', parallelism: 3 }]]);
    const detail = toJobDetail({ run: run(events), events, progress: undefined, nowMs: T0 + 1 });
    assert.deepEqual(detail.vertices.map((v) => [v.id, v.parallelism, v.state]), [['a', 1, 'created'], ['b', 3, 'created']]);
    assert.deepEqual(detail.regions.flatMap((r) => r.tasks).sort(), ['a#0', 'b#0', 'b#1', 'b#2']);
  });

  it("a running job: 'running' while its lease is fresh, with the published counters of its epoch; 'unfinished' once the lease is stale", () => {
    const events = log([submitted(0), deployed(2, 'a#0'), deployed(2, 'a#1'), finished(10, 'a#0', 0, 100, [[100, 1000]])]);
    const progress: PublishedJobProgress = { jobId: 'j1', epoch: 1, atMs: T0 + 11, progress: { elapsedMs: 11, tasksFinished: 1, tasksTotal: 4, tasksRunning: 1, regionsFinished: 1, regionsTotal: 4, recordsRead: 160, recordsShuffled: 160, bytesShuffled: 1600, failures: 0, vertices: [{ id: 'a', recordsIn: 160, recordsOut: 160 }, { id: 'b', recordsIn: 0, recordsOut: 0 }] } };
    const live = toJobDetail({ run: run(events, { leaseRenewedAtMs: T0 + 10, tasksFinished: 1 }), events, progress, nowMs: T0 + 12 });
    assert.equal(live.job.status, 'running');
    assert.deepEqual([live.job.records, live.job.bytes, live.job.endedAtMs, live.job.durationMs], [160, 1600, undefined, 12]);
    assert.deepEqual(live.progress, { atMs: T0 + 11, elapsedMs: 11, tasksFinished: 1, tasksTotal: 4, tasksRunning: 1, recordsRead: 160, recordsShuffled: 160, bytesShuffled: 1600, failures: 0 });
    assert.deepEqual(live.vertices.map((v) => [v.id, v.state, v.recordsIn, v.recordsOut]), [['a', 'running', 160, 160], ['b', 'created', 0, 0]], 'live per-vertex counters over the finished attempts’ 100');
    const stale = toJobDetail({ run: run(events, { leaseRenewedAtMs: T0 + 10 }), events, progress, nowMs: T0 + 10 + 6_000 });
    assert.equal(stale.job.status, 'unfinished');
    assert.equal(stale.progress, undefined, 'no live counters for a job nobody runs');
    const older = toJobDetail({ run: run(events, { epoch: 2, leaseRenewedAtMs: T0 + 10 }), events, progress, nowMs: T0 + 12 });
    assert.equal(older.progress, undefined, "an earlier epoch's counters are not the running master's");
  });

  it('a resumed run: the dead master’s open attempts end at the new job-submitted; the job failed with its error', () => {
    const events = log([submitted(0), deployed(2, 'a#0'), submitted(100, 2), deployed(101, 'a#0', 1, 'w9'), [110, 'job-failed', { error: { code: 'WEFT_ERR_JOB_FAILED', message: 'boom' } }]]);
    const detail = toJobDetail({ run: run(events, { status: 'failed', epoch: 2 }), events, progress: undefined, nowMs: T0 + 200 });
    assert.deepEqual(detail.attempts.map((a) => [a.attempt, a.epoch, a.endMs, a.state]), [[0, 1, 100, 'reset'], [1, 2, 110, 'failed']]);
    assert.deepEqual(detail.error, { code: 'WEFT_ERR_JOB_FAILED', message: 'boom' });
    assert.deepEqual([detail.job.status, detail.job.endedAtMs], ['failed', T0 + 110]);
  });

  it('a log it cannot read (a newer format) is an unreadable job with the reason, not an error', () => {
    const events = new Error('the event log of job j1 cannot be read: event 1 has format version 9');
    const detail = toJobDetail({ run: run([], { status: 'unreadable', problem: events.message }), events, progress: undefined, nowMs: T0 });
    assert.equal(detail.job.status, 'unreadable');
    assert.match(String(detail.job.problem), /format version 9/);
    assert.deepEqual([detail.vertices, detail.attempts, detail.regions], [[], [], []]);
  });

  it('a reset of tasks never deployed leaves them created (resetting them cost nothing)', () => {
    const events = log([submitted(0), deployed(1, 'a#0'), [5, 'failover', { ...FAILOVER, failedTask: 'a#0', tasksToRestart: ['a#0', 'b#0'] }], [6, 'tasks-reset', { tasks: ['a#0', 'b#0'], reason: 'failover' }]]);
    const detail = toJobDetail({ run: run(events, { leaseRenewedAtMs: T0 + 6 }), events, progress: undefined, nowMs: T0 + 7 });
    assert.deepEqual(detail.vertices.map((v) => [v.id, v.state]), [['a', 'reset'], ['b', 'created']]);
  });

  it('a global failover (the job master failed: no task named) resets every task and names none as failed', () => {
    const global = { ...FAILOVER, failedTask: undefined, attemptId: undefined, global: true, strategy: 'all', error: { code: 'WEFT_ERR_CHECKPOINT_FAILED', message: 'checkpoint 4 failed' }, tasksToRestart: ['a#0', 'b#0'], tasksRunAgain: ['a#0', 'b#0'] };
    const { failedTask: _t, attemptId: _a, ...logged } = global;
    const events = log([submitted(0), deployed(1, 'a#0'), deployed(1, 'b#0'), [5, 'failover', logged], [6, 'tasks-reset', { tasks: ['a#0', 'b#0'], reason: 'failover' }]]);
    const detail = toJobDetail({ run: run(events, { leaseRenewedAtMs: T0 + 6 }), events, progress: undefined, nowMs: T0 + 7 });
    assert.deepEqual(detail.failovers, [{ atMs: 5, global: true, error: { code: 'WEFT_ERR_CHECKPOINT_FAILED', message: 'checkpoint 4 failed' }, strategy: 'all', tasksToRestart: ['a#0', 'b#0'], tasksRunAgain: ['a#0', 'b#0'], lostPartitions: [], backoffMs: 10 }]);
    assert.deepEqual(detail.attempts.map((a) => [a.task, a.state, a.endMs]), [['a#0', 'reset', 6], ['b#0', 'reset', 6]], 'reset, not failed, and no "undefined" task');
  });

  it('ignores event types it does not know and fields an older weft did not write', () => {
    const events = log([submitted(0), [1, 'something-new', { x: 1 }], [2, 'task-deployed', { executionVertexId: 'a#0' }]]);
    const folded = foldJobEvents(events);
    assert.deepEqual(folded.attempts.map((a) => [a.task, a.attempt, a.executor]), [['a#0', 0, undefined]]);
  });

  it("the list row of a run sums what the detail's job sums", () => {
    const source = { run: run(SUCCEEDED, { status: 'succeeded' as const, tasksFinished: 4 }), events: SUCCEEDED, progress: undefined, nowMs: T0 };
    assert.deepEqual(toJobListItem(source), toJobDetail(source).job);
  });

  it('uiJobStatus keeps terminal statuses as the log says', () => {
    for (const status of ['succeeded', 'failed', 'cancelled', 'unreadable'] as const) assert.equal(uiJobStatus(run([], { status }), T0), status);
  });
});
