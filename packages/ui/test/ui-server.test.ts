// The UI server over an event log: routes, ApiErrors, the token rule, the event stream, /metrics (checked by
// promtool), the app's files, and close().
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { appAssets, isLoopbackHost, startUiServer, UI_API_ERRORS, type UiServerOptions } from '@weft/ui';

import { createTempDir, promtoolProblems } from '@weft/testkit';
import { testingEventLog } from './support/testing-event-log.js';

const TOPOLOGY = { vertices: [{ id: 'a', parallelism: 1 }, { id: 'b', parallelism: 1 }], edges: [{ id: 'a->b', source: 'a', target: 'b', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' }] };
const TOKEN = 'a-ui-token-of-32-characters-long';

function submittedLog() {
  const log = testingEventLog();
  log.append('j1', 'job-submitted', { name: 'wc', topology: TOPOLOGY, tasksTotal: 2, options: { restartStrategy: { type: 'none' } } });
  log.append('j1', 'task-deployed', { executionVertexId: 'a#0', attempt: 0, executor: 'w1' });
  log.renewed.set('j1', Date.now());
  return log;
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function withServer(options: Partial<UiServerOptions> & Pick<UiServerOptions, 'eventLog'>, fn: (url: string) => Promise<void>): Promise<void> {
  await using tmp = await createTempDir('weft-ui-app-');
  await using server = await startUiServer({ appAssets: appAssets(tmp.path), ...options });
  await fn(server.url);
}

describe('the UI server API', () => {
  it('answers /api/jobs and /api/jobs/:id from the log, and a 404 ApiError for an unknown job or route', async () => {
    await withServer({ eventLog: submittedLog() }, async (url) => {
      const list = JSON.parse((await get(`${url}/api/jobs`)).body);
      assert.equal(list.version, 1);
      assert.deepEqual(list.jobs.map((j: { jobId: string; status: string; tasksTotal: number }) => [j.jobId, j.status, j.tasksTotal]), [['j1', 'running', 2]]);
      const detail = await get(`${url}/api/jobs/j1`);
      assert.equal(detail.status, 200);
      assert.match(String(detail.headers['content-type']), /^application\/json/);
      const job = JSON.parse(detail.body);
      assert.deepEqual(job.vertices.map((v: { id: string }) => v.id), ['a', 'b']);
      assert.deepEqual(job.attempts.map((a: { task: string; executor: string }) => [a.task, a.executor]), [['a#0', 'w1']]);
      const unknown = await get(`${url}/api/jobs/nope`);
      assert.equal(unknown.status, 404);
      assert.deepEqual(JSON.parse(unknown.body).error.code, 'WEFT_UI_ERR_UNKNOWN_JOB');
      // a malformed percent-encoding names no job (and no app file): a 404, not a 500
      for (const path of ['/api/jobs/%E0%A4%A', '/api/jobs/%E0%A4%A/stream']) {
        const malformed = await get(`${url}${path}`);
        assert.deepEqual([malformed.status, JSON.parse(malformed.body).error.code], [404, 'WEFT_UI_ERR_UNKNOWN_JOB'], path);
      }
      assert.equal((await get(`${url}/app/%E0%A4%A`)).status, 404);
      const route = await get(`${url}/api/nothing-here`);
      assert.deepEqual([route.status, JSON.parse(route.body).error.code], [404, 'WEFT_UI_ERR_NOT_FOUND']);
      const post = await get(`${url}/api/jobs`, {}, 'POST');
      assert.deepEqual([post.status, JSON.parse(post.body).error.code], [405, 'WEFT_UI_ERR_METHOD_NOT_ALLOWED']);
      const cluster = JSON.parse((await get(`${url}/api/cluster`)).body);
      assert.deepEqual(cluster, { version: 1, available: false, executors: [], shuffleServers: [] });
    });
  });

  it('lists the jobs newest first (listRuns is oldest first)', async () => {
    const log = submittedLog();
    log.append('j2', 'job-submitted', { name: 'later', topology: TOPOLOGY, tasksTotal: 2, options: { restartStrategy: { type: 'none' } } });
    log.append('j3', 'job-submitted', { name: 'latest', topology: TOPOLOGY, tasksTotal: 2, options: { restartStrategy: { type: 'none' } } });
    assert.deepEqual((await log.listRuns()).map((r) => r.jobId), ['j1', 'j2', 'j3']);
    await withServer({ eventLog: log }, async (url) => {
      const list = JSON.parse((await get(`${url}/api/jobs`)).body);
      assert.deepEqual(list.jobs.map((j: { jobId: string }) => j.jobId), ['j3', 'j2', 'j1']);
    });
  });

  it('serves the index page at every path outside /api and /app (client-side routes), and 404 for a missing app file', async () => {
    await withServer({ eventLog: submittedLog() }, async (url) => {
      for (const path of ['/', '/jobs/unknown-job', '/some/deep/path']) {
        const page = await get(`${url}${path}`);
        assert.equal(page.status, 200, path);
        assert.match(page.body, /<!doctype html>/i);
      }
      assert.equal((await get(`${url}/app/missing.js`)).status, 404);
    });
  });

  it('shows an unreadable job (a log of a newer format) with the reason, not a failure', async () => {
    const log = submittedLog();
    log.events.get('j1')?.push({ v: 9 as 1, seq: 3, epoch: 1, atMs: Date.now(), type: 'task-finished', data: {} });
    await withServer({ eventLog: log }, async (url) => {
      const job = JSON.parse((await get(`${url}/api/jobs/j1`)).body).job;
      assert.equal(job.status, 'unreadable');
      assert.match(job.problem, /format version 9/);
    });
  });

  it('answers a cluster snapshot when given a lister, and a 503 ApiError when it fails', async () => {
    const executors = [{ id: 'e1', address: 'http://127.0.0.1:1', slots: 4, freeSlots: 2, load: 0.5, version: '0.1.0', state: 'live' }];
    await withServer({ eventLog: submittedLog(), cluster: async () => ({ executors, shuffleServers: [] }) }, async (url) => {
      assert.deepEqual(JSON.parse((await get(`${url}/api/cluster`)).body), { version: 1, available: true, executors, shuffleServers: [] });
    });
    await withServer({ eventLog: submittedLog(), cluster: async () => Promise.reject(new Error('ECONNREFUSED')) }, async (url) => {
      const answer = await get(`${url}/api/cluster`);
      assert.deepEqual([answer.status, JSON.parse(answer.body).error.code], [503, 'WEFT_UI_ERR_EVENT_LOG']);
    });
  });
});

describe('the UI token', () => {
  it('without one (loopback only), answers job data only to a loopback Host header: a DNS-rebound name gets a 403', async () => {
    await withServer({ eventLog: submittedLog() }, async (url) => {
      const port = new URL(url).port;
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `127.0.0.2:${port}`]) assert.equal((await get(`${url}/api/jobs`, { host })).status, 200, host);
      for (const path of ['/api/jobs', '/api/jobs/j1', '/api/jobs/j1/stream', '/metrics']) {
        const rebound = await get(`${url}${path}`, { host: `attacker.example:${port}` });
        assert.deepEqual([rebound.status, JSON.parse(rebound.body).error.code], [403, 'WEFT_UI_ERR_HOST_NOT_ALLOWED'], path);
      }
      assert.equal((await get(`${url}/`, { host: `attacker.example:${port}` })).status, 200, 'the app page holds no job data');
    });
    // with a token the token decides, whatever the Host
    await withServer({ eventLog: submittedLog(), token: TOKEN }, async (url) => {
      assert.equal((await get(`${url}/api/jobs`, { host: 'ui.example.com', authorization: `Bearer ${TOKEN}` })).status, 200);
    });
  });

  it('is required beyond loopback: 127.x, ::1 and localhost are loopback, 0.0.0.0, :: and other hosts are not', async () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1']) assert.equal(isLoopbackHost(host), true, host);
    for (const host of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', 'example.com', '::ffff:10.0.0.1']) assert.equal(isLoopbackHost(host), false, host);
    await assert.rejects(startUiServer({ eventLog: submittedLog(), host: '0.0.0.0' }), (e: { code?: string; context?: { field?: string } }) => e.code === 'WEFT_ERR_INVALID_ARGUMENT' && e.context?.field === 'token');
    await assert.rejects(startUiServer({ eventLog: submittedLog(), token: 'short' }), /at least 16 bytes/);
    await assert.rejects(startUiServer({ eventLog: submittedLog(), bogus: 1 } as unknown as UiServerOptions), /unknown option/);
  });

  it('guards /api and /metrics: 401 ApiError without it or with a wrong one, 200 with the Bearer header or ?token=; the app page needs none', async () => {
    await withServer({ eventLog: submittedLog(), token: TOKEN }, async (url) => {
      for (const path of ['/api/jobs', '/api/jobs/j1', '/api/jobs/j1/stream', '/api/cluster', '/metrics', '/api/nothing']) {
        const none = await get(`${url}${path}`);
        assert.equal(none.status, 401, path);
        assert.equal(JSON.parse(none.body).error.code, 'WEFT_UI_ERR_UNAUTHORIZED');
        assert.match(String(none.headers['www-authenticate']), /^Bearer/);
        assert.equal((await get(`${url}${path}`, { authorization: `Bearer ${TOKEN}x` })).status, 401, `${path} with a wrong token`);
      }
      assert.equal((await get(`${url}/api/jobs`, { authorization: `Bearer ${TOKEN}` })).status, 200);
      assert.equal((await get(`${url}/api/jobs/j1?token=${TOKEN}`)).status, 200);
      assert.equal((await get(`${url}/metrics?token=${TOKEN}`)).status, 200);
      assert.equal((await get(`${url}/`)).status, 200);
    });
  });
});

/** Reads a server-sent event stream until it ends: each event's name and parsed data, in order. */
function readStream(url: string, onEvent: (name: string, data: unknown) => void): Promise<{ status: number; events: { name: string; data: unknown }[] }> {
  return new Promise((resolve, reject) => {
    const events: { name: string; data: unknown }[] = [];
    request(url, (res) => {
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const name = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
          const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as unknown;
          events.push({ name, data });
          onEvent(name, data);
        }
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, events }));
    })
      .on('error', reject)
      .end();
  });
}

describe('the event stream', () => {
  it('sends the job when it changed and an end event once the job ended, then closes', async () => {
    const log = submittedLog();
    await withServer({ eventLog: log, streamIntervalMs: 5 }, async (url) => {
      let step = 0;
      const { status, events } = await readStream(`${url}/api/jobs/j1/stream`, (name) => {
        if (name !== 'job') return;
        step++;
        // each job event makes the log move on, until it ends
        if (step === 1) log.append('j1', 'task-finished', { executionVertexId: 'a#0', attempt: 0, partitions: [], metrics: { recordsIn: 7, outputs: [] }, sinks: [], durationMs: 1 });
        if (step === 2) log.append('j1', 'job-finished', {});
      });
      assert.equal(status, 200);
      assert.deepEqual(events.map((e) => e.name), ['job', 'job', 'job', 'end']);
      const jobs = events.filter((e) => e.name === 'job').map((e) => (e.data as { job: { status: string; tasksFinished: number } }).job);
      assert.deepEqual(jobs.map((j) => [j.status, j.tasksFinished]), [['running', 0], ['running', 1], ['succeeded', 1]]);
    });
  });

  it('answers 404 before any event for an unknown job, and close() ends open streams', async () => {
    const log = submittedLog();
    const server = await startUiServer({ eventLog: log, streamIntervalMs: 5, appAssets: appAssets('/nonexistent') });
    const unknown = await get(`${server.url}/api/jobs/nope/stream`);
    assert.deepEqual([unknown.status, JSON.parse(unknown.body).error.code], [404, 'WEFT_UI_ERR_UNKNOWN_JOB']);
    const open = readStream(`${server.url}/api/jobs/j1/stream`, () => {});
    await new Promise((r) => setTimeout(r, 30));
    const metrics = (await get(`${server.url}/metrics`)).body;
    assert.match(metrics, /^weft_ui_sse_clients 1$/m);
    await Promise.all([server.close(), server.close()]);
    const { events } = await open;
    assert.ok(events.length >= 1 && events.every((e) => e.name === 'job'), 'the stream ended with the server');
    await assert.rejects(get(`${server.url}/api/jobs`), /ECONNREFUSED/);
  });
});

describe('an event stream whose client goes away', () => {
  it('stops polling for it and counts it no more', async () => {
    await withServer({ eventLog: submittedLog(), streamIntervalMs: 5 }, async (url) => {
      const clients = async (): Promise<number> => Number(/^weft_ui_sse_clients (\d+)$/m.exec((await get(`${url}/metrics`)).body)?.[1]);
      await new Promise<void>((resolve, reject) => {
        const req = request(`${url}/api/jobs/j1/stream`, { agent: false }, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', () => {});
        req.on('close', () => {});
        req.end();
        setTimeout(() => reject(new Error('no first event')), 10_000).unref();
      });
      while ((await clients()) !== 0) await new Promise((r) => setTimeout(r, 10));
      assert.equal(await clients(), 0);
      // the stream is counted as an answered request once its client went away (it never 'finish'es)
      assert.match((await get(`${url}/metrics`)).body, /^weft_ui_http_requests_total\{route="stream",status="200"\} 1$/m);
    });
  });
});

describe('close()', () => {
  it('leaves no server, socket or timer behind, with a stream open when it closed', async () => {
    const count = (): Record<string, number> => {
      const counts: Record<string, number> = {};
      for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
      return counts;
    };
    await new Promise((resolve) => setImmediate(resolve));
    const before = count();
    const server = await startUiServer({ eventLog: submittedLog(), streamIntervalMs: 5, appAssets: appAssets('/nonexistent') });
    let first: () => void = () => {};
    const started = new Promise<void>((resolve) => (first = resolve));
    const stream = readStream(`${server.url}/api/jobs/j1/stream`, () => first());
    await started;
    await server.close();
    await stream;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const after = count();
    for (const kind of ['TCPServerWrap', 'TCPSocketWrap', 'Timeout']) assert.equal(after[kind] ?? 0, before[kind] ?? 0, `${kind}: ${JSON.stringify({ before, after })}`);
  });
});

describe('/metrics', () => {
  it('is valid Prometheus text (promtool check metrics), with the job master’s progress when it runs the job', async () => {
    const progress = { elapsedMs: 1500, tasksFinished: 1, tasksTotal: 2, tasksRunning: 1, regionsFinished: 1, regionsTotal: 2, recordsRead: 10, recordsShuffled: 10, bytesShuffled: 100, failures: 0 };
    await withServer({ eventLog: submittedLog(), liveJob: () => ({ jobId: 'j"1', progress }) }, async (url) => {
      await get(`${url}/api/jobs`);
      await get(`${url}/api/nothing`);
      const answer = await get(`${url}/metrics`);
      assert.match(String(answer.headers['content-type']), /^text\/plain; version=0\.0\.4/);
      assert.match(answer.body, /^weft_ui_http_requests_total\{route="jobs",status="200"\} 1$/m);
      assert.match(answer.body, /^weft_ui_http_requests_total\{route="api",status="404"\} 1$/m);
      assert.match(answer.body, /^weft_job_tasks_finished\{job_id="j\\"1"\} 1$/m);
      assert.match(answer.body, /^weft_job_records_read_total\{job_id="j\\"1"\} 10$/m);
      assert.equal(promtoolProblems(answer.body), '');
    });
  });

  it('promtool would catch a broken exposition (the check is real)', () => {
    assert.notEqual(promtoolProblems('# TYPE x counter\nx{a="1} 1\n'), '');
  });
});

describe('the app files', () => {
  it('serves app/dist when it exists, else bundles app/src/main.ts in memory, else a placeholder page', async () => {
    await using tmp = await createTempDir('weft-ui-assets-');
    const eventLog = submittedLog();
    {
      await using server = await startUiServer({ eventLog, appAssets: appAssets(tmp.path) });
      assert.match((await get(`${server.url}/`)).body, /not built here/);
    }
    await mkdir(join(tmp.path, 'src'));
    await writeFile(join(tmp.path, 'index.html'), '<!doctype html><script type="module" src="/app/main.js"></script>');
    await writeFile(join(tmp.path, 'src', 'main.ts'), "import { word } from './word.js';\nconst n: number = 41 + 1;\ndocument.title = `${word} ${n}`;\n");
    await writeFile(join(tmp.path, 'src', 'word.ts'), "export const word: string = 'weft';\n");
    {
      await using server = await startUiServer({ eventLog, appAssets: appAssets(tmp.path) });
      assert.match((await get(`${server.url}/jobs/x`)).body, /\/app\/main\.js/);
      const js = await get(`${server.url}/app/main.js`);
      assert.equal(js.status, 200);
      assert.match(String(js.headers['content-type']), /^text\/javascript/);
      assert.match(js.body, /"weft"/);
      assert.doesNotMatch(js.body, /: number/, 'TypeScript was compiled away');
    }
    await mkdir(join(tmp.path, 'dist'));
    await writeFile(join(tmp.path, 'dist', 'index.html'), '<!doctype html><p>built</p>');
    await writeFile(join(tmp.path, 'dist', 'main.js'), 'console.log("built")');
    {
      await using server = await startUiServer({ eventLog, appAssets: appAssets(tmp.path) });
      assert.match((await get(`${server.url}/`)).body, /built/);
      assert.equal((await get(`${server.url}/app/main.js`)).body, 'console.log("built")');
      assert.equal((await get(`${server.url}/app/..%2F..%2Fpackage.json`)).status, 404, 'no way out of dist/');
    }
  });
});

describe('UI API error codes', () => {
  it('documents every WEFT_UI_ERR_* code of the server in packages/ui/README.md', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const undocumented = Object.keys(UI_API_ERRORS).filter((code) => !new RegExp(`\\| \`${code}\` \\|`).test(readme));
    assert.deepEqual(undocumented, [], 'add a row to the error table of packages/ui/README.md');
  });
});
