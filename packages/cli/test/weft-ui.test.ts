// The web UI's server against real runs, as a user starts it: `weft run examples/word-count.ts --ui 0
// --inject-faults …` serves the run's own log while it runs (jobs list, an event stream with counters that
// grow), and `weft ui --meta …` serves it afterwards from another process (the failover with its cause,
// 404 for an unknown job, 401 without the token), and stops on SIGTERM with exit 0.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { JobDetailResponse, JobListResponse } from '@weft/ui';
import Database from 'better-sqlite3';
import { createTempDir, promtoolProblems } from '@weft/testkit';
import { startWeft } from './helpers/weft-process.js';


const wordCount = fileURLToPath(new URL('../../../examples/word-count.ts', import.meta.url));
const TOKEN = 'test-token-of-at-least-16-bytes';

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (t: string) => (body += t));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

/** The `job` events of a job's stream until its `end` event. */
function streamUntilEnd(url: string): Promise<JobDetailResponse[]> {
  return new Promise((resolve, reject) => {
    const jobs: JobDetailResponse[] = [];
    let ended = false;
    request(url, { agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      let buffer = '';
      res.setEncoding('utf8').on('data', (t: string) => {
        buffer += t;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const name = /^event: (.*)$/m.exec(block)?.[1];
          if (name === 'job') jobs.push(JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? '{}') as JobDetailResponse);
          if (name === 'end') ended = true;
        }
      });
      res.on('end', () => (ended ? resolve(jobs) : reject(new Error(`the stream closed without an end event after ${jobs.length} job events`))));
    })
      .on('error', reject)
      .end();
  });
}

async function firstJobId(url: string, exited: Promise<unknown>): Promise<string> {
  let gone = false;
  void exited.then(() => (gone = true));
  for (;;) {
    const list = JSON.parse((await get(`${url}/api/jobs`)).body) as JobListResponse;
    const job = list.jobs[0];
    if (job !== undefined) return job.jobId;
    if (gone) throw new Error('the run ended before its job showed in the UI');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const live = (d: JobDetailResponse): number => (d.progress?.recordsRead ?? 0) + (d.progress?.tasksFinished ?? 0) + d.job.tasksFinished;

describe('weft run --ui and weft ui', () => {
  it('serves a run with an injected failover while it runs, and from its log afterwards', async () => {
    await using dir = await createTempDir('weft-ui-run-');
    // long enough for several progress publishes (PROGRESS_PUBLISH_INTERVAL_MS, 1 s): with built code 3 M lines
    // could end within the first, and no two events of the running job showed counters that grew
    const args = ['run', wordCount, '--ui', '0', '--parallelism', '2', '--workers', '2', '--inject-faults', 'throw:count#1@20000', '--', '--lines', '8000000', '--output', join(dir.path, 'out.tsv')];
    await using run = startWeft(args, { cwd: dir.path });
    const url = (await run.waitFor(/ui on (http:\/\/\S+)/))[1] as string;
    const jobId = await firstJobId(url, run.exited);
    const stream = streamUntilEnd(`${url}/api/jobs/${jobId}/stream`);
    // the job master's own counters at /metrics, valid Prometheus text
    let metrics = '';
    let exited = false;
    void run.exited.then(() => (exited = true));
    while (!/^weft_job_tasks_finished\{job_id="/m.test(metrics)) {
      assert.equal(exited, false, `the run ended before /metrics showed its progress:\n${metrics}`);
      metrics = (await get(`${url}/metrics`)).body;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(metrics, new RegExp(`^weft_job_records_read_total\\{job_id="${jobId}"\\} \\d+$`, 'm'));
    assert.equal(promtoolProblems(metrics), '');
    const events = await stream;
    assert.equal(await run.exited, 0, run.stderr());
    assert.match(run.stderr(), /^ui on http:\/\/127\.0\.0\.1:\d+$/m);

    const running = events.filter((e) => e.job.status === 'running');
    assert.ok(running.length >= 2, `at least two job events while it ran, got ${events.map((e) => e.job.status).join(', ')}`);
    for (let i = 1; i < running.length; i++) assert.ok(live(running[i] as JobDetailResponse) >= live(running[i - 1] as JobDetailResponse) || (running[i]?.failovers.length ?? 0) > (running[i - 1]?.failovers.length ?? 0), 'counters only grow (but for a failover)');
    assert.ok(live(running.at(-1) as JobDetailResponse) > live(running[0] as JobDetailResponse), `counters grew while it ran: ${running.map(live).join(', ')}`);
    assert.ok(running.some((e) => e.progress !== undefined), 'the job master published live counters');
    const last = events.at(-1) as JobDetailResponse;
    assert.equal(last.job.status, 'succeeded');
    assert.deepEqual(last.vertices.map((v) => v.id).sort(), [...new Set(last.edges.flatMap((e) => [e.source, e.target]))].sort());

    // afterwards, from another process: the same log, through `weft ui --meta`
    await using ui = startWeft(['ui', '--meta', `sqlite://${join(dir.path, '.weft', 'shuffle-meta.db')}`, '--port', '0', '--token', TOKEN], { cwd: dir.path });
    const uiUrl = (await ui.waitFor(/^ui on (http:\/\/\S+)$/m))[1] as string;
    const auth = { authorization: `Bearer ${TOKEN}` };
    assert.equal((await get(`${uiUrl}/api/jobs`)).status, 401, 'a token is configured: none is refused');
    const list = JSON.parse((await get(`${uiUrl}/api/jobs`, auth)).body) as JobListResponse;
    assert.deepEqual(list.jobs.map((j) => [j.jobId, j.status, j.failovers]), [[jobId, 'succeeded', 1]]);
    const detail = JSON.parse((await get(`${uiUrl}/api/jobs/${jobId}?token=${TOKEN}`)).body) as JobDetailResponse;
    assert.equal(detail.failovers.length, 1);
    const failover = detail.failovers[0];
    assert.equal(failover?.failedTask, 'count#1');
    assert.equal(failover?.error.code, 'WEFT_ERR_INJECTED_FAULT');
    assert.ok(failover?.tasksToRestart.includes('count#1'));
    // the same set `weft plan --fail` predicts for the job's graph as the UI shows it
    const topologyFile = join(dir.path, 'topology.json');
    await writeFile(topologyFile, JSON.stringify({ vertices: detail.vertices.map((v) => ({ id: v.id, parallelism: v.parallelism })), edges: detail.edges.map(({ id, source, target, distribution, partitionType }) => ({ id, source, target, distribution, partitionType })) }));
    await using plan = startWeft(['plan', topologyFile, '--fail', 'count#1', '--json'], { cwd: dir.path });
    assert.equal(await plan.exited, 0, plan.stderr());
    assert.deepEqual([...(failover?.tasksToRestart ?? [])].sort(), [...(JSON.parse(plan.stdout()) as { restart: string[] }).restart].sort());
    assert.ok(detail.attempts.some((a) => a.task === 'count#1' && a.attempt === 1 && a.state === 'finished'), 'the restarted attempt finished');
    assert.ok(detail.attempts.every((a) => typeof a.executor === 'string'), 'every attempt names its executor');
    assert.ok(detail.regions.length > 0);
    const unknown = await get(`${uiUrl}/api/jobs/no-such-job`, auth);
    assert.deepEqual([unknown.status, (JSON.parse(unknown.body) as { error: { code: string } }).error.code], [404, 'WEFT_UI_ERR_UNKNOWN_JOB']);
    ui.child.kill('SIGTERM');
    assert.equal(await ui.exited, 0, ui.stderr());

    // the same log as a newer weft would have written it (one event of format version 7): a clear message, not a failure
    const db = new Database(join(dir.path, '.weft', 'shuffle-meta.db'));
    try {
      const changed = db.prepare("UPDATE weft_job_events SET event = replace(event, '\"v\":1,', '\"v\":7,') WHERE job_id = ? AND seq = 3").run(jobId).changes;
      assert.equal(changed, 1);
    } finally {
      db.close();
    }
    await using newer = startWeft(['ui', '--meta', `sqlite://${join(dir.path, '.weft', 'shuffle-meta.db')}`, '--port', '0'], { cwd: dir.path });
    const newerUrl = (await newer.waitFor(/^ui on (http:\/\/\S+)$/m))[1] as string;
    const unreadable = JSON.parse((await get(`${newerUrl}/api/jobs`)).body) as JobListResponse;
    assert.deepEqual(unreadable.jobs.map((j) => [j.jobId, j.status]), [[jobId, 'unreadable']]);
    assert.match(unreadable.jobs[0]?.problem ?? '', /event 3 was written by event format version 7; this weft reads version 1/);
    const unreadableDetail = await get(`${newerUrl}/api/jobs/${jobId}`);
    assert.equal(unreadableDetail.status, 200);
    assert.equal((JSON.parse(unreadableDetail.body) as JobDetailResponse).job.status, 'unreadable');
    newer.child.kill('SIGTERM');
    assert.equal(await newer.exited, 0, newer.stderr());
  });

  it('refuses a host beyond loopback without a token (exit 2, naming --token and WEFT_UI_TOKEN), and bad flags naming the flag', async () => {
    await using dir = await createTempDir('weft-ui-flags-');
    await using open = startWeft(['ui', '--host', '0.0.0.0'], { cwd: dir.path, env: { WEFT_UI_TOKEN: '' } });
    assert.equal(await open.exited, 2);
    assert.match(open.stderr(), /--host 0\.0\.0\.0: .*--token T or set WEFT_UI_TOKEN/);
    await using port = startWeft(['ui', '--port', 'x'], { cwd: dir.path });
    assert.equal(await port.exited, 2);
    assert.match(port.stderr(), /--port must be an integer/);
    await using runPort = startWeft(['run', wordCount, '--ui=99999'], { cwd: dir.path });
    assert.equal(await runPort.exited, 2);
    assert.match(runPort.stderr(), /--ui PORT must be an integer in \[0, 65535\]/);
    await using uiHost = startWeft(['run', wordCount, '--ui-host', '127.0.0.1'], { cwd: dir.path });
    assert.equal(await uiHost.exited, 2);
    assert.match(uiHost.stderr(), /--ui-host needs --ui/);
  });
});
