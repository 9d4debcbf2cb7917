// What `weft run` prints: the live progress line and the final summary, from plain progress and result
// objects (no job runs here).
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { describe, it } from 'node:test';
import type { JobProgress, JobResult } from '@weft/engine';
import { formatBytes, formatFailure, formatProgressLine, formatRunSummary, formatTaskSet, runSummaryJson } from '../src/commands/run-report.js';

function progress(overrides: Partial<JobProgress> = {}): JobProgress {
  return {
    elapsedMs: 1520,
    tasksFinished: 3,
    tasksTotal: 8,
    tasksRunning: 2,
    regionsFinished: 1,
    regionsTotal: 4,
    recordsRead: 1_234_567,
    recordsShuffled: 89_012,
    bytesShuffled: 3 * 1024 * 1024,
    failures: 0,
    ...overrides,
  };
}

function result(overrides: Partial<JobResult> = {}): JobResult {
  return {
    jobId: 'job-1',
    name: 'word-count',
    status: 'succeeded',
    durationMs: 2345,
    parallelism: 2,
    exchangeMode: 'ALL_EDGES_BLOCKING',
    executor: { kind: 'workers', executors: 2, slots: 1 },
    workerPids: [101, 102],
    topology: { vertices: [{ id: 'read', parallelism: 2 }, { id: 'count', parallelism: 2 }], edges: [{ id: 'read->count', source: 'read', target: 'count', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' }] },
    failoverStrategy: 'region',
    resumed: false,
    tasksReused: 0,
    restartStrategy: 'NoRestartBackoffTimeStrategy',
    regions: 4,
    tasks: 4,
    vertices: [],
    edges: [
      { id: 'read->count', source: 'read', target: 'count', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING', records: 1_500_000, bytes: 12 * 1024 * 1024 },
      { id: 'count->top-words', source: 'count', target: 'top-words', distribution: 'ALL_TO_ALL', partitionType: 'PIPELINED_BOUNDED', records: 7, bytes: 300 },
    ],
    recordsRead: 2_000_000,
    recordsShuffled: 1_500_007,
    bytesShuffled: 12 * 1024 * 1024 + 300,
    attempts: 4,
    failures: 0,
    restarts: 0,
    failovers: [],
    failoverResumes: [],
    executorsLost: [],
    deploymentLatency: { tasks: 4, p50Ms: 3, p99Ms: 9, maxMs: 9 },
    placement: { tasksPerExecutor: { "worker-0": 4 }, spreadDeployments: 0 },
    taskAttempts: {},
    partitionsReleasedDuringJob: 0,
    bytesReleasedDuringJob: 0,
    outputs: [{ sink: 'write-counts', path: '/tmp/out/counts.tsv', parts: 2 }],
    collected: { 'top words': ['the\t1000', 'of\t900'] },
    ...overrides,
  };
}

describe('the progress line', () => {
  it('shows time, tasks done of total, regions, records read and records and bytes shuffled', () => {
    assert.equal(formatProgressLine(progress()), '[1.52 s] tasks 3/8 (2 running) · regions 1/4 · read 1,234,567 records · shuffled 89,012 records, 3.00 MiB');
  });

  it('adds the failures once there are some', () => {
    assert.match(formatProgressLine(progress({ failures: 2 })), / · 2 failed$/);
    assert.doesNotMatch(formatProgressLine(progress()), /failed/);
  });

  it('formats small times in milliseconds and bytes below a KiB exactly', () => {
    assert.match(formatProgressLine(progress({ elapsedMs: 12.4, bytesShuffled: 17 })), /^\[12 ms\] .*shuffled 89,012 records, 17 B$/);
    assert.equal(formatBytes(1536), '1.50 KiB');
    assert.equal(formatBytes(5 * 1024 ** 3), '5.00 GiB');
  });
});

describe('the run summary', () => {
  it('lists collected values, the job line, tasks in regions, records, every edge and every output', () => {
    const text = formatRunSummary(result());
    assert.equal(
      text,
      [
        'top words:',
        '  the\t1000',
        '  of\t900',
        'Job word-count succeeded in 2.35 s (parallelism 2, 2 workers × 1 slot, ALL_EDGES_BLOCKING)',
        '  4 tasks in 4 pipelined regions; 4 attempts deployed',
        '  read 2,000,000 records; shuffled 1,500,007 records, 12.0 MiB',
        '  edges:',
        '    read->count       ALL_TO_ALL BLOCKING              1,500,000 records    12.0 MiB',
        '    count->top-words  ALL_TO_ALL PIPELINED_BOUNDED             7 records       300 B',
        '  wrote /tmp/out/counts.tsv (2 parts, sink write-counts)',
        '',
      ].join('\n'),
    );
  });

  it('says "1 task in 1 pipelined region", "1 attempt" and "1 restart" in the singular', () => {
    const text = formatRunSummary(result({ tasks: 1, regions: 1, attempts: 1, restarts: 1, edges: [], outputs: [{ sink: 's', path: '/o', parts: 1 }] }));
    assert.match(text, /^ {2}1 task in 1 pipelined region; 1 attempt deployed, 1 restart$/m);
    assert.match(text, /wrote \/o \(1 part, sink s\)/);
    assert.doesNotMatch(text, /edges:/, 'no edge table for a job without edges');
    const oneRecord = formatRunSummary(result({ edges: [{ id: 'count->sink', source: 'count', target: 'sink', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING', records: 1, bytes: 17 }] }));
    assert.match(oneRecord, /count->sink {2}ALL_TO_ALL BLOCKING +1 record +17 B$/m);
    assert.match(formatRunSummary(result({ tasks: 2, regions: 1, attempts: 3, restarts: 2 })), /^ {2}2 tasks in 1 pipelined region; 3 attempts deployed, 2 restarts$/m);
    // after a restart the counters are the last attempts' (a restored streaming job read more than that in all)
    assert.match(formatRunSummary(result({ tasks: 2, regions: 1, attempts: 3, restarts: 2 })), /^ {2}read [\d,]+ records; shuffled [\d,]+ records, .* \(by the last attempts: a restarted task counts from its restart\)$/m);
  });

  it('says how many partitions (and bytes) were released while the job ran, and nothing when none was', () => {
    const text = formatRunSummary(result({ partitionsReleasedDuringJob: 2, bytesReleasedDuringJob: 12 * 1024 * 1024 }));
    assert.match(text, /^ {2}released 2 partitions \(12\.0 MiB\) while the job ran, once their consumers finished$/m);
    assert.doesNotMatch(formatRunSummary(result()), /released/);
    assert.equal(runSummaryJson(result({ partitionsReleasedDuringJob: 2, bytesReleasedDuringJob: 300 }))['partitionsReleasedDuringJob'], 2);
    assert.equal(runSummaryJson(result({ partitionsReleasedDuringJob: 2, bytesReleasedDuringJob: 300 }))['bytesReleasedDuringJob'], 300);
  });

  it('shows at most 20 collected values of a sink and counts the rest', () => {
    const values = Array.from({ length: 25 }, (_, i) => `v${i}`);
    const text = formatRunSummary(result({ collected: { many: values } }));
    assert.match(text, /^ {2}v19$/m);
    assert.doesNotMatch(text, /^ {2}v20$/m);
    assert.match(text, /^ {2}… 5 more$/m);
  });

  it('says how a failed job ended, in process, and what each failover restarted', () => {
    const text = formatRunSummary(
      result({
        status: 'failed',
        executor: { kind: 'inprocess', executors: 1, slots: 4 },
        collected: {},
        outputs: [],
        failovers: [
          {
            atMs: 812,
            failedTask: 'count#1',
            attemptId: 'count#1@0',
            error: { code: 'WEFT_ERR_USER_FUNCTION_FAILED', message: 'boom' },
            lostPartitions: ['read->count#0'],
            strategy: 'region',
            tasksToRestart: ['read#0', 'count#0', 'count#1'],
            tasksRunAgain: ['read#0', 'count#1'],
            tasksTotal: 4,
            tasksDeployed: 4,
            backoffMs: 10,
          },
        ],
      }),
    );
    assert.match(text, /^Job word-count failed in 2\.35 s \(parallelism 2, in process, 4 slots, ALL_EDGES_BLOCKING\)$/m);
    assert.match(text, /1\. at 812 ms: task count#1@0 failed: WEFT_ERR_USER_FUNCTION_FAILED: boom/);
    assert.match(text, /lost partitions: read->count#0/);
    assert.match(text, /restarted 3 of 4 tasks: read#0, count#0-1/);
    assert.match(text, /saved 1 of 4 tasks \(25%\)/);
  });

  it('groups task ids by vertex with subtask ranges', () => {
    assert.equal(formatTaskSet(['sort#0', 'sort#1', 'sort#2', 'sort#5', 'count#0']), 'sort#0-2,5, count#0');
  });

  it('names an expected fault by its code without a stack trace, and shows the stack of anything else', () => {
    const expected = Object.assign(new Error('no reachable shuffle server in redis://127.0.0.1:1/0'), { code: 'SHF_ERR_STORAGE_UNAVAILABLE' });
    const text = formatFailure(new Error('job terasort failed', { cause: new Error('task sort#1 failed', { cause: expected }) }));
    assert.match(text, /^caused by: SHF_ERR_STORAGE_UNAVAILABLE: no reachable shuffle server in redis:\/\/127\.0\.0\.1:1\/0$/m);
    assert.doesNotMatch(text, /\n\s+at /, 'no stack trace for an expected fault');
    const bug = formatFailure(new Error('job failed', { cause: new TypeError('x is not a function') }));
    assert.match(bug, /caused by: TypeError: x is not a function\n\s+at /, 'a bug keeps its stack');
  });

  it('names a system error (a store that is down, a full disk) by its code without a stack trace', async () => {
    const system = await mkdir('/dev/null/chk-2', { recursive: true }).then(() => undefined, (error: unknown) => error);
    assert.equal((system as { code?: string })?.code, 'ENOTDIR');
    const text = formatFailure(new Error('job failed', { cause: Object.assign(new Error('cannot restore job j from checkpoint 2'), { code: 'WEFT_ERR_STATE_RESTORE', cause: system }) }));
    assert.match(text, /^caused by: ENOTDIR: not a directory, mkdir '\/dev\/null\/chk-2'$/m, 'the code once');
    assert.doesNotMatch(text, /\n\s+at /);
    const userIo = formatFailure(new Error('job failed', { cause: Object.assign(new Error('map#0 failed'), { code: 'WEFT_ERR_USER_FUNCTION_FAILED', cause: system }) }));
    assert.match(userIo, /caused by: Error: ENOTDIR: not a directory, mkdir '\/dev\/null\/chk-2'\n\s+at /, "a user function's own I/O error keeps its stack: where to look");
    const lookalike = formatFailure(new Error('job failed', { cause: Object.assign(new Error('thrown by a user function'), { code: 'EPARSE' }) }));
    assert.match(lookalike, /caused by: Error: thrown by a user function\n\s+at /, 'an error that only looks like one (no syscall) keeps its stack');
  });
});
