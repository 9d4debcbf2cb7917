// `weft run --parallelism auto` as a user runs it: bad flags refused (exit 2, naming the flag), and a
// SIGKILLed adaptive run resumed by the same command reusing the logged decisions. Real `weft`
// processes, a real SQLite job event log.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';
import { parseAdaptiveFlags, parseByteSize } from '../src/commands/adaptive-flags.js';
import { killOnceFinished, weft as runWeft, type WeftOutcome } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const slowJob = fileURLToPath(new URL('./fixtures/adaptive-slow-job.ts', import.meta.url));
const wordCount = fileURLToPath(new URL('../../../examples/word-count.ts', import.meta.url));

function weft(args: string[], cwd: string): Promise<WeftOutcome> {
  return runWeft(bin, args, cwd);
}

function usage(run: () => unknown, flag: string): void {
  assert.throws(run, (error: unknown) => (error as { code?: string }).code === 'WEFT_ERR_USAGE' && (error as Error).message.includes(flag), flag);
}

describe('weft run --parallelism auto', () => {
  let dir: TempDir;
  before(async () => {
    dir = await createTempDir('weft-auto-');
  });
  after(() => dir.remove());

  it('parses sizes in binary units and refuses bad adaptive flags naming the flag', () => {
    assert.equal(parseByteSize('run', '--data-volume-per-task', '16mb'), 16 * 1024 * 1024);
    assert.equal(parseByteSize('run', '--data-volume-per-task', '512KiB'), 512 * 1024);
    assert.equal(parseByteSize('run', '--data-volume-per-task', '4096'), 4096);
    assert.equal(parseByteSize('run', '--data-volume-per-task', '1.5k'), 1536);
    assert.deepEqual(parseAdaptiveFlags('run', { parallelism: 'auto' }), {});
    assert.equal(parseAdaptiveFlags('run', { parallelism: '4' }), undefined);
    assert.deepEqual(parseAdaptiveFlags('run', { parallelism: 'auto', 'min-parallelism': '2', 'max-parallelism': '8', 'data-volume-per-task': '1m' }), { minParallelism: 2, maxParallelism: 8, dataVolumePerTaskBytes: 1024 * 1024 });
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'min-parallelism': '9', 'max-parallelism': '8' }), '--min-parallelism');
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'min-parallelism': '200' }), '--min-parallelism');
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'data-volume-per-task': '0' }), '--data-volume-per-task');
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'data-volume-per-task': '-1mb' }), '--data-volume-per-task');
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'data-volume-per-task': '16 parsecs' }), '--data-volume-per-task');
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'max-parallelism': '0' }), '--max-parallelism');
    usage(() => parseAdaptiveFlags('run', { 'max-parallelism': '8' }), '--max-parallelism');
  });

  it('exits 2 naming the flag when --min-parallelism is above --max-parallelism, or the volume is malformed', async () => {
    const minMax = await weft(['run', wordCount, '--parallelism', 'auto', '--min-parallelism', '9', '--max-parallelism', '4', '--executor', 'inprocess'], dir.path);
    assert.equal(minMax.code, 2, minMax.stderr);
    assert.match(minMax.stderr, /--min-parallelism 9 is above --max-parallelism 4/);
    const volume = await weft(['run', wordCount, '--parallelism', 'auto', '--data-volume-per-task', '0kb', '--executor', 'inprocess'], dir.path);
    assert.equal(volume.code, 2, volume.stderr);
    assert.match(volume.stderr, /--data-volume-per-task must be at least 1 byte/);
  });

  it('resumes a SIGKILLed adaptive run with the logged decisions, never deciding again', async () => {
    const metaPath = join(dir.path, 'meta.db');
    const output = join(dir.path, 'counts.tsv');
    const args = ['run', slowJob, '--job-id', 'auto-kill', '--parallelism', 'auto', '--max-parallelism', '16', '--data-volume-per-task', '64', '--default-source-parallelism', '2',
      '--executor', 'inprocess', '--slots', '1', '--meta', `sqlite://${metaPath}`, '--store', pathToFileURL(join(dir.path, 'store')).href, '--json', '--', '--output', output];
    const decisionsIn = async (log: SqliteJobEventLog): Promise<{ vertexId: string; parallelism: number }[]> =>
      (await log.readRun('auto-kill')).flatMap((e) => (e.type === 'vertex-initialized' && (e.data as { decided?: boolean }).decided === true ? [e.data as { vertexId: string; parallelism: number }] : []));
    let before: { vertexId: string; parallelism: number }[];
    {
      await using log = new SqliteJobEventLog({ path: metaPath });
      // both sources and at least one decided subtask finished: the decision is in the log
      await killOnceFinished({ bin, args, cwd: dir.path, log, jobId: 'auto-kill', atLeast: 3 });
      before = await decisionsIn(log);
    }
    assert.deepEqual(before.map((d) => d.vertexId), ['count'], 'the killed run logged its decision');
    const resumed = await weft(args, dir.path);
    assert.equal(resumed.code, 0, resumed.stderr);
    const summary = JSON.parse(resumed.stdout) as { resumed: boolean; tasks: number; tasksReused: number; vertices: { id: string; parallelism: number; decided?: unknown }[]; collected: Record<string, unknown[]> };
    assert.equal(summary.resumed, true);
    assert.deepEqual(summary.collected['groups'], [64], 'the fixed vertex behind the decided one ran: the skipped subtasks\' partitions count as done, empty');
    assert.ok(summary.tasksReused >= 3, `reused ${summary.tasksReused}`);
    assert.equal(summary.vertices.find((v) => v.id === 'count')?.parallelism, before[0]?.parallelism);
    assert.ok(summary.vertices.find((v) => v.id === 'count')?.decided !== undefined);
    await using log = new SqliteJobEventLog({ path: metaPath });
    assert.deepEqual(await decisionsIn(log), before, 'the resumed run logged no new decision');
    // what `weft jobs` prints: the run's tasks, not its reserved subtasks
    const record = (await log.listRuns()).find((r) => r.jobId === 'auto-kill');
    assert.equal(record?.tasksTotal, summary.tasks);
    assert.equal(record?.tasksFinished, summary.tasks);
    // weft plan reads the run's summary: the topology with the decided parallelism
    await writeFile(join(dir.path, 'summary.json'), resumed.stdout);
    const plan = await weft(['plan', join(dir.path, 'summary.json'), '--json'], dir.path);
    assert.equal(plan.code, 0, plan.stderr);
    const regions = (JSON.parse(plan.stdout) as { regions: string[][] }).regions.flat();
    assert.equal(regions.filter((t) => t.startsWith('count#')).length, before[0]?.parallelism);
    const counts = (await readFile(output, 'utf8')).trim().split('\n').sort();
    assert.deepEqual(counts, Array.from({ length: 64 }, (_, k) => `${k}\t100`).sort());
  });
});
