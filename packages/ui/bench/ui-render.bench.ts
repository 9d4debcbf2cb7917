// The job page of a 10,000-task job in headless Chromium (issue 17's target: rendered in ≤ 2 s on this machine).
// A generated job (20 vertices × 500 subtasks, 10,000+ attempts on 16 executors, 8 failovers; test/helpers/
// generate-job.ts) served by the fixture server (the app bundled from app/src, the job's JSON canned): each run
// opens a fresh tab on `#/jobs/<id>` and reads the page's `weft:rendered` performance mark (set once the header,
// counters, DAG, timeline — a canvas at this size —, failovers and restart strategy are drawn), i.e. the time
// from navigation start: HTML, the 170 KiB script, the ~2 MB JSON fetch and parse, layout and drawing.
// Baseline in the same run, interleaved: an empty page's load (navigation start → loadEventEnd) from the same
// server in a fresh tab. One untimed round first.
//
//   npm run bench -- ui-render
//   WEFT_BENCH_RUNS=9 npm run bench -- ui-render
import { cpus, loadavg, totalmem } from 'node:os';
import { BenchReport, median, round } from '@weft/testkit';
import { UI_API_VERSION } from '../src/index.js';
import { cannedCluster } from '../test/helpers/canned-job.js';
import { launchChromium } from '../test/helpers/chromium.js';
import { generateJob } from '../test/helpers/generate-job.js';
import { startStaticUiServer } from '../test/helpers/static-ui-server.js';

const runs = Number(process.env['WEFT_BENCH_RUNS'] ?? 5);
const TARGET_MS = 2000;

const job = generateJob();
const jsonBytes = Buffer.byteLength(JSON.stringify(job));
await using server = await startStaticUiServer({ jobs: { version: UI_API_VERSION, jobs: [job.job] }, details: new Map([[job.job.jobId, job]]), cluster: cannedCluster() });
await using chromium = await launchChromium();

async function jobPageMs(): Promise<{ markMs: number; wallMs: number }> {
  const page = await chromium.newPage();
  try {
    const started = performance.now();
    await page.goto(`${server.url}/#/jobs/${job.job.jobId}`);
    await page.waitForSelector('html[data-rendered="job"]', { timeout: 60_000 });
    const wallMs = performance.now() - started;
    const markMs = await page.evaluate(() => performance.getEntriesByName('weft:rendered')[0]?.startTime ?? Number.NaN);
    const canvas = await page.$eval('[data-timeline-mode]', (el) => el.getAttribute('data-timeline-mode'));
    if (canvas !== 'canvas') throw new Error(`the timeline of ${job.attempts.length} attempts was drawn as ${canvas}, not a canvas`);
    return { markMs, wallMs };
  } finally {
    await page.close();
  }
}

async function blankPageMs(): Promise<number> {
  const page = await chromium.newPage();
  try {
    await page.goto(`${server.url}/blank`, { waitUntil: 'load' });
    // An expression, not a function: this file is typechecked without the DOM lib.
    return Number(await page.evaluate('performance.getEntriesByType("navigation")[0]?.loadEventEnd ?? NaN'));
  } finally {
    await page.close();
  }
}

await jobPageMs();
await blankPageMs();
const marks: number[] = [];
const walls: number[] = [];
const blanks: number[] = [];
const loads: number[] = [];
for (let r = 0; r < runs; r++) {
  loads.push(loadavg()[0] as number);
  blanks.push(await blankPageMs());
  const { markMs, wallMs } = await jobPageMs();
  marks.push(markMs);
  walls.push(wallMs);
}

const out = new BenchReport('ui-render');
const fmt = (xs: readonly number[]): string => xs.map((x) => round(x, 0)).join(' ');
out.row('empty page load (baseline)', `${round(median(blanks), 1)} ms`, '1.00', fmt(blanks));
out.row(`job page, ${job.vertices.length * job.vertices[0]!.parallelism} tasks, rendered mark`, `${round(median(marks), 1)} ms`, round(median(marks) / median(blanks), 2).toFixed(2), fmt(marks));
out.row('  same, navigation → rendered seen by puppeteer', `${round(median(walls), 1)} ms`, round(median(walls) / median(blanks), 2).toFixed(2), fmt(walls));
out.report('job page of a 10,000-task job rendered (median)', 'ms', median(marks), 'empty page load (median)', median(blanks));
console.log(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${(await chromium.browser.version())}; 1-min load average during the runs ${loads.map((l) => l.toFixed(2)).join(' ')}`);
console.log(`job: ${job.vertices.length} vertices, ${job.edges.length} edges, ${job.regions.length} regions, ${job.attempts.length} attempts on 16 executors, ${job.failovers.length} failovers; JSON ${(jsonBytes / 2 ** 20).toFixed(2)} MiB`);
out.print(`UI render, ${runs} runs each, interleaved (target: ≤ ${TARGET_MS} ms)`, ['page', 'median', 'vs empty page', 'runs (ms)']);
if (median(marks) > TARGET_MS) console.log(`target missed: ${round(median(marks), 0)} ms > ${TARGET_MS} ms`);
