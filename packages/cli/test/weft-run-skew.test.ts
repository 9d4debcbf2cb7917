// `weft run --parallelism auto` with skewed key groups, as a user runs it: skew flags refused when bad
// (exit 2, naming the flag), and a SIGKILLed run whose join split a skewed key group resumed by the same
// command with the logged split, never deciding again. Real `weft` processes, a real SQLite job event log.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { LoggedJobEvent } from '@weft/engine';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';
import { parseAdaptiveFlags } from '../src/commands/adaptive-flags.js';
import { killOnceFinished, weft as runWeft, type WeftOutcome } from './helpers/kill-and-resume.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const skewJob = fileURLToPath(new URL('./fixtures/adaptive-skew-job.ts', import.meta.url));

function weft(args: string[], cwd: string): Promise<WeftOutcome> {
  return runWeft(bin, args, cwd);
}

function usage(run: () => unknown, flag: string): void {
  assert.throws(run, (error: unknown) => (error as { code?: string }).code === 'WEFT_ERR_USAGE' && (error as Error).message.includes(flag), flag);
}

type Decision = { vertexId: string; parallelism: number; skewedSplits?: { subpartition: number; parts: number }[]; inputs?: unknown };

describe('weft run --parallelism auto with skewed key groups', () => {
  let dir: TempDir;
  before(async () => {
    dir = await createTempDir('weft-skew-');
  });
  after(() => dir.remove());

  it('parses the skew flags and refuses bad ones naming the flag', async () => {
    assert.deepEqual(parseAdaptiveFlags('run', { parallelism: 'auto', 'skewed-threshold': '8mb', 'skewed-factor': '2.5', 'skewed-join': 'none', 'skewed-aggregation': 'auto' }), {
      skewedThresholdBytes: 8 * 1024 * 1024,
      skewedFactor: 2.5,
      skewedJoin: 'none',
      skewedAggregation: 'auto',
    });
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'skewed-factor': '0.5' }), '--skewed-factor');
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'skewed-factor': 'four' }), '--skewed-factor');
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'skewed-threshold': '8 parsecs' }), '--skewed-threshold');
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'skewed-threshold': '0' }), '--skewed-threshold');
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'skewed-join': 'forced' }), '--skewed-join');
    usage(() => parseAdaptiveFlags('run', { parallelism: 'auto', 'skewed-aggregation': 'yes' }), '--skewed-aggregation');
    usage(() => parseAdaptiveFlags('run', { 'skewed-threshold': '8mb' }), '--skewed-threshold');
    const bad = await weft(['run', skewJob, '--parallelism', 'auto', '--skewed-threshold', 'lots', '--executor', 'inprocess'], dir.path);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--skewed-threshold must be a size/);
  });

  it('resumes a SIGKILLed run with the logged split of its skewed join, never deciding again', async () => {
    const metaPath = join(dir.path, 'meta.db');
    const output = join(dir.path, 'counts.tsv');
    const args = ['run', skewJob, '--job-id', 'skew-kill', '--parallelism', 'auto', '--max-parallelism', '16', '--data-volume-per-task', '2kb', '--skewed-threshold', '1kb',
      '--default-source-parallelism', '4', '--executor', 'inprocess', '--slots', '1', '--meta', `sqlite://${metaPath}`, '--store', pathToFileURL(join(dir.path, 'store')).href, '--json', '--', '--output', output, '--wait-ms', '50'];
    const decisionsIn = async (log: SqliteJobEventLog): Promise<Decision[]> =>
      (await log.readRun('skew-kill')).flatMap((e) => (e.type === 'vertex-initialized' && (e.data as { decided?: boolean }).decided === true ? [e.data as Decision] : []));
    let logged: Decision[];
    {
      await using log = new SqliteJobEventLog({ path: metaPath });
      // the 8 source subtasks and the 14 join subtasks finished: the join's split and the count's
      // decision are in the log, the count (slow) still runs — its producer's skipped subtasks
      // (join#14, join#15) must not hold it up when it runs again. The count is decided (and logged) just
      // after the join's last subtask finished: the kill waits for that event too.
      const countDecided = (events: readonly LoggedJobEvent[]): boolean => events.some((e) => e.type === 'vertex-initialized' && (e.data as { vertexId?: string; decided?: boolean }).vertexId === 'count' && (e.data as { decided?: boolean }).decided === true);
      await killOnceFinished({ bin, args, cwd: dir.path, log, jobId: 'skew-kill', atLeast: 22, andWhen: countDecided });
      logged = await decisionsIn(log);
    }
    const joinDecision = logged.find((d) => d.vertexId === 'join');
    assert.ok(joinDecision !== undefined, 'the killed run logged the join decision');
    assert.equal(joinDecision.parallelism, 14);
    assert.ok(logged.some((d) => d.vertexId === 'count'), 'the killed run decided the count too');
    assert.equal(joinDecision.skewedSplits?.length, 1, JSON.stringify(joinDecision.skewedSplits));
    assert.ok((joinDecision.skewedSplits?.[0]?.parts ?? 0) > 1);
    const resumed = await weft(args, dir.path);
    assert.equal(resumed.code, 0, resumed.stderr);
    const summary = JSON.parse(resumed.stdout) as { resumed: boolean; tasksReused: number; vertices: { id: string; parallelism: number; decided?: { skewedSplits?: unknown; inputs: unknown } }[] };
    assert.equal(summary.resumed, true);
    assert.ok(summary.tasksReused >= 22, `reused ${summary.tasksReused}`);
    const joined = summary.vertices.find((v) => v.id === 'join');
    assert.equal(joined?.parallelism, joinDecision.parallelism);
    assert.deepEqual(joined?.decided?.skewedSplits, joinDecision.skewedSplits);
    assert.deepEqual(joined?.decided?.inputs, joinDecision.inputs);
    await using log = new SqliteJobEventLog({ path: metaPath });
    const after = await decisionsIn(log);
    assert.deepEqual(after, logged, 'the resumed run decided nothing again');
    // exact: every fact meets its key's one weight once, so the count per key is the facts per key
    const expected = new Map<string, number>();
    for (let n = 0; n < 4000; n++) {
      const key = n % 2 === 0 ? 'k0' : `k${n % 50}`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    const counts = (await readFile(output, 'utf8')).trim().split('\n').sort();
    assert.deepEqual(counts, [...expected].map(([k, n]) => `${k}\t${n}`).sort());
  });
});
