// The single-page app in headless Chromium: the UI under test (helpers/ui-under-test.ts: the fixture server now,
// a real `weft run --ui` once merged) for the pages a person opens, and the fixture server alone for what only it
// can serve (another format version, no stream, a cluster, a 10,000-task job). Screenshots of each page go to
// test-output/ui-screenshots/ for review.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Page } from 'puppeteer-core';
import { UI_API_VERSION } from '../src/index.js';
import { CANNED_JOB_ID, CANNED_UNREADABLE_PROBLEM, cannedCluster, cannedFinishedJobDetail, cannedJobDetail, cannedJobList } from './helpers/canned-job.js';
import { type Chromium, launchChromium } from './helpers/chromium.js';
import { generateJob } from './helpers/generate-job.js';
import { startStaticUiServer } from './helpers/static-ui-server.js';
import { startUiUnderTest, type UiUnderTest } from './helpers/ui-under-test.js';

const screenshots = fileURLToPath(new URL('../../../test-output/ui-screenshots/', import.meta.url));
mkdirSync(screenshots, { recursive: true });

async function open(page: Page, url: string, rendered: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector(`html[data-rendered="${rendered}"]`, { timeout: 20_000 });
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
}

const textOf = (page: Page, selector: string): Promise<string> => page.$eval(selector, (el) => el.textContent ?? '');

/** Waits until the text of `selector` is no longer `was` (an expression: this file has no DOM types). */
async function waitForTextChange(page: Page, selector: string, was: string): Promise<void> {
  await page.waitForFunction(`document.querySelector(${JSON.stringify(selector)})?.textContent !== ${JSON.stringify(was)}`, { timeout: 20_000 });
}

let chromium: Chromium;
before(async () => {
  chromium = await launchChromium();
});
after(async () => {
  await chromium?.close();
});

describe('the UI under test, in a browser', () => {
  let ui: UiUnderTest;
  let page: Page;
  before(async () => {
    ui = await startUiUnderTest();
    page = await chromium.newPage();
  });
  after(async () => {
    await page?.close();
    await ui?.close();
  });

  it('lists the jobs with their status and links to each job', async () => {
    await open(page, ui.pageUrl('#/jobs'), 'jobs');
    const ids = await page.$$eval('tr[data-job-id]', (rows) => rows.map((r) => r.getAttribute('data-job-id')));
    assert.ok(ids.includes(ui.jobId), `jobs list ${ids.join(', ')} lacks ${ui.jobId}`);
    assert.equal(await page.$eval(`tr[data-job-id="${ui.jobId}"]`, (r) => r.getAttribute('data-status')), 'running');
    await shot(page, 'jobs');
    await page.click(`tr[data-job-id="${ui.jobId}"] a`);
    await page.waitForSelector('html[data-rendered="job"]');
    assert.equal(await page.$eval('[data-job]', (el) => el.getAttribute('data-job')), ui.jobId);
  });

  it("draws the job's graph: one node per vertex, one edge per job edge with the same ends, and the pipelined regions that span vertices", async () => {
    await open(page, ui.pageUrl(`#/jobs/${encodeURIComponent(ui.jobId)}`), 'job');
    const vertices = await page.$$eval('svg[data-dag] [data-vertex]', (els) => els.map((e) => e.getAttribute('data-vertex')));
    assert.deepEqual([...vertices].sort(), [...ui.expected.vertices].sort());
    const edges = await page.$$eval('svg[data-dag] [data-edge]', (els) => els.map((e) => `${e.getAttribute('data-source')}->${e.getAttribute('data-target')}`));
    assert.deepEqual([...edges].sort(), ui.expected.edges.map((e) => `${e.source}->${e.target}`).sort());
    // Every edge's label names its distribution and partition type.
    const labels = await page.$$eval('svg[data-dag] [data-edge]', (els) => els.map((e) => `${e.querySelector('[data-label="kind"]')?.textContent} / ${e.querySelector('[data-label="size"]')?.textContent}`));
    assert.equal(labels.length, ui.expected.edges.length);
    for (const label of labels) assert.match(label, /^(ALL_TO_ALL|POINTWISE) · [A-Z_]+ \/ [\d.]+ (B|KiB|MiB|GiB|TiB) · /);
    // Each pipelined region group that spans several vertices: a halo round each member, and the group in the legend.
    for (const group of ui.expected.spanningRegions) {
      const key = [...group].sort().join(',');
      const halos = await page.$$eval(`svg[data-dag] [data-region-group="${key}"][data-region-halo]`, (els) => els.map((e) => e.getAttribute('data-region-halo')));
      assert.deepEqual([...halos].sort(), [...group].sort(), `halos of region group ${key}`);
      assert.equal((await page.$$(`[data-region-group-item="${key}"]`)).length, 1);
    }
    await shot(page, 'job');
  });

  it('shows the failover with its cause and the restarted tasks, and the restart strategy', async () => {
    await open(page, ui.pageUrl(`#/jobs/${encodeURIComponent(ui.jobId)}`), 'job');
    const causes = await page.$$eval('[data-failover] [data-failover-cause]', (els) => els.map((e) => e.textContent ?? ''));
    assert.ok(causes.some((c) => c.includes(ui.expected.failoverCause)), `no failover cause contains ${ui.expected.failoverCause}: ${JSON.stringify(causes)}`);
    assert.match(await textOf(page, '[data-failover]'), /tasks reset/);
    assert.ok((await page.$$('[data-timeline-mode] [data-attempt], [data-timeline-mode] canvas')).length > 0, 'the timeline draws attempts');
    assert.ok((await page.$$('[data-restarts]')).length === 1, 'the restart strategy shows its restarts');
  });

  it('updates the live counters from the stream without reloading the page', async () => {
    await open(page, ui.pageUrl(`#/jobs/${encodeURIComponent(ui.jobId)}`), 'job');
    await page.evaluate(() => Object.assign(globalThis, { weftNoReload: true }));
    const before = await textOf(page, '[data-counter="recordsRead"]');
    await ui.advance();
    await waitForTextChange(page, '[data-counter="recordsRead"]', before);
    assert.notEqual(await textOf(page, '[data-counter="recordsRead"]'), before);
    assert.equal((await page.$$('[data-live="stream"]')).length, 1, 'the update came over the stream, not by polling');
    assert.equal(await page.evaluate(() => (globalThis as { weftNoReload?: boolean }).weftNoReload), true, 'the page was not reloaded');
    await shot(page, 'job-live');
  });

  it('shows a finished job from the log with its final figures, and follows no stream for it', async () => {
    await open(page, ui.pageUrl(`#/jobs/${encodeURIComponent(ui.finishedJobId)}`), 'job');
    assert.equal(await page.$eval('[data-job-status]', (el) => el.getAttribute('data-job-status')), 'succeeded');
    assert.equal((await page.$$('[data-live]')).length, 0);
    assert.equal((await page.$$('[data-counter="duration"]')).length, 1);
    assert.ok(!ui.apiRequests().some((r) => r.path.startsWith(`/api/jobs/${encodeURIComponent(ui.finishedJobId)}/stream`)), 'no stream was opened for a finished job');
    await shot(page, 'job-finished');
  });

  it('sends the page token on every API call and on the stream', async () => {
    const api = ui.apiRequests();
    assert.ok(api.length > 0);
    for (const request of api) {
      if (request.path.includes('/stream')) assert.ok(request.path.includes(`token=${ui.token}`), `stream ${request.path} lacks the token`);
      else assert.equal(request.authorization, `Bearer ${ui.token}`, `${request.path} lacks the token`);
    }
  });

  it('shows a 404 page for an unknown job id and for an unknown route', async () => {
    await open(page, ui.pageUrl(`#/jobs/${ui.unknownJobId}`), 'not-found');
    assert.match(await textOf(page, 'main'), /404/);
    assert.ok((await textOf(page, 'main')).includes(ui.unknownJobId), 'the 404 page names the id');
    await shot(page, 'not-found');
    await open(page, ui.pageUrl('#/nowhere'), 'not-found');
  });

  it('says "not in cluster mode" on the cluster page without a cluster', async () => {
    await open(page, ui.pageUrl('#/cluster'), 'cluster');
    assert.match(await textOf(page, '[data-cluster-unavailable]'), /Not in cluster mode/);
    await shot(page, 'cluster-unavailable');
  });
});

describe('the app against the fixture server, in a browser', () => {
  it('shows "log/UI format version N not supported" for a response of another version', async () => {
    const newer = { ...cannedJobDetail(), version: UI_API_VERSION + 1 };
    await using server = await startStaticUiServer({ jobs: { ...cannedJobList(), version: UI_API_VERSION + 1 } as never, details: new Map([[CANNED_JOB_ID, newer]]), cluster: cannedCluster() });
    const page = await chromium.newPage();
    try {
      await open(page, `${server.url}/#/jobs/${CANNED_JOB_ID}`, 'version-error');
      assert.ok((await textOf(page, 'main')).includes(`log/UI format version ${UI_API_VERSION + 1} not supported`));
      await shot(page, 'version-error');
      await open(page, `${server.url}/#/jobs`, 'version-error');
    } finally {
      await page.close();
    }
  });

  it("lists a log it cannot read with the reason, e.g. a newer format", async () => {
    await using server = await startStaticUiServer({ jobs: cannedJobList(), details: new Map(), cluster: cannedCluster() });
    const page = await chromium.newPage();
    try {
      await open(page, `${server.url}/#/jobs`, 'jobs');
      assert.ok((await textOf(page, 'tr[data-status="unreadable"]')).includes(CANNED_UNREADABLE_PROBLEM));
    } finally {
      await page.close();
    }
  });

  it("shows the job's final state when the stream ends", async () => {
    await using server = await startStaticUiServer({ jobs: cannedJobList(), details: new Map([[CANNED_JOB_ID, cannedJobDetail()]]), cluster: cannedCluster() });
    const page = await chromium.newPage();
    try {
      await open(page, `${server.url}/#/jobs/${CANNED_JOB_ID}`, 'job');
      await server.waitForStreams(CANNED_JOB_ID);
      // The final state is logged (GET answers it) but the stream only says `end`.
      server.setDetail(CANNED_JOB_ID, cannedFinishedJobDetail(CANNED_JOB_ID));
      server.end(CANNED_JOB_ID);
      await page.waitForSelector('[data-job-status="succeeded"]', { timeout: 20_000 });
      assert.equal((await page.$$('[data-live]')).length, 0, 'no live marker once the job ended');
    } finally {
      await page.close();
    }
  });

  it('polls for snapshots when the stream cannot be opened', async () => {
    await using server = await startStaticUiServer({ jobs: cannedJobList(), details: new Map([[CANNED_JOB_ID, cannedJobDetail()]]), cluster: cannedCluster(), noStream: true });
    const page = await chromium.newPage();
    try {
      await open(page, `${server.url}/#/jobs/${CANNED_JOB_ID}`, 'job');
      await page.waitForSelector('[data-live="polling"]', { timeout: 20_000 });
      const before = await textOf(page, '[data-counter="recordsRead"]');
      server.publish(CANNED_JOB_ID, cannedJobDetail({ elapsedMs: 9000, recordsRead: 777_000, tasksFinished: 6 }));
      await waitForTextChange(page, '[data-counter="recordsRead"]', before);
      assert.equal(await textOf(page, '[data-counter="recordsRead"]'), '777.0k');
    } finally {
      await page.close();
    }
  });

  it('lists executors and shuffle servers in cluster mode', async () => {
    await using server = await startStaticUiServer({ jobs: cannedJobList(), details: new Map(), cluster: cannedCluster(true) });
    const page = await chromium.newPage();
    try {
      await open(page, `${server.url}/#/cluster`, 'cluster');
      assert.equal((await page.$$('tr[data-executor]')).length, 2);
      assert.equal((await page.$$('tr[data-shuffle-server]')).length, 1);
      await shot(page, 'cluster');
    } finally {
      await page.close();
    }
  });

  it('draws a 10,000-task job: 20 vertices, its edges, and the attempts on a canvas in 16 executor lanes', async () => {
    const job = generateJob();
    await using server = await startStaticUiServer({ jobs: { version: UI_API_VERSION, jobs: [job.job] }, details: new Map([[job.job.jobId, job]]), cluster: cannedCluster() });
    const page = await chromium.newPage();
    try {
      await open(page, `${server.url}/#/jobs/${job.job.jobId}`, 'job');
      assert.equal((await page.$$('svg[data-dag] [data-vertex]')).length, 20);
      assert.equal((await page.$$('svg[data-dag] [data-edge]')).length, job.edges.length);
      assert.equal(await page.$eval('[data-timeline-mode]', (el) => el.getAttribute('data-timeline-mode')), 'canvas');
      assert.equal(await page.$eval('[data-timeline-mode]', (el) => el.getAttribute('data-attempts')), String(job.attempts.length));
      // A regions lane plus one lane per executor.
      assert.equal(await page.$eval('[data-timeline-mode]', (el) => el.getAttribute('data-lanes')), '17');
      assert.equal((await page.$$('[data-failover]')).length, job.failovers.length);
      // The canvas answers a hover with the attempt under the pointer: scan down one column until it does.
      const box = await (await page.$('[data-timeline-canvas]'))!.boundingBox();
      let tip = '';
      for (let y = 30; y < box!.height && tip === ''; y += 3) {
        await page.mouse.move(box!.x + 400, box!.y + y);
        tip = await page.$eval('.timeline-wrap .tooltip', (el) => (el.hasAttribute('hidden') ? '' : el.textContent ?? ''));
      }
      assert.match(tip, /^(region r\d+-\d+: 2 tasks|v\d+#\d+ attempt \d+ on executor-\d+)/);
      await shot(page, 'job-10k');
    } finally {
      await page.close();
    }
  });
});
