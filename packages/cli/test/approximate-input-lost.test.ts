// A consumer still reading a finished approximate producer whose worker process is SIGKILLed: its channel
// goes unavailable and no new attempt of that producer would ever come (nothing restarts a finished task).
// The consumer tells the job master (`input-unavailable`), which knows the producer's outputs were lost with
// its process, and fails the consumer over at once (WEFT_ERR_APPROXIMATE_INPUT_LOST): the failover restarts
// the producer with it, from the final checkpoint. Before, the consumer waited out the network shuffle's
// reconnect timeout (10 s) and then failed with SHF_ERR_TIMEOUT. Real worker processes over the network
// shuffle; the oracle is a naive count of the generated keys.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli } from '@weft/cli';

const job = fileURLToPath(new URL('../../../examples/test/support/kill-source-while-read-job.ts', import.meta.url));
const RECORDS = 300_000;
const KEYS = 60_000;

async function weftCli(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, cwd, env: {} });
  return { code, stdout, stderr };
}

/** The naive count of `k<floor(seq / 2) % KEYS>` over [0, RECORDS). */
function reference(): [string, number][] {
  const counts = new Map<string, number>();
  for (let seq = 0; seq < RECORDS; seq++) {
    const key = `k${Math.floor(seq / 2) % KEYS}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].sort(([a], [b]) => a.localeCompare(b));
}

interface Failover {
  failedTask: string;
  error: { code: string; message: string };
  lostPartitions: string[];
  tasksToRestart: string[];
}

describe('approximate recovery: a consumer of a lost finished producer', () => {
  it('weft run --workers 4: fails over at once when the finished source it still reads is SIGKILLed, restarting that source with it; nothing is lost', { timeout: 120_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-approx-input-lost-'));
    try {
      const marks = join(dir, 'marks');
      await mkdir(marks);
      const output = join(dir, 'counts.tsv');
      const run = await weftCli(['run', job, '--workers', '4', '--parallelism', '2', '--approximate-recovery', '--checkpoint-mode', 'at-least-once', '--checkpoint-interval', '100ms', '--json', '--', '--records', String(RECORDS), '--keys', String(KEYS), '--marks', marks, '--output', output], dir);
      assert.equal(run.code, 0, run.stderr);
      assert.ok((await readdir(marks)).includes('killed'), `a source that ran alone in its worker was killed: ${(await readdir(marks)).join(' ')}`);
      const { failovers } = JSON.parse(run.stdout) as { failovers: Failover[] };
      assert.equal(failovers.length, 1, JSON.stringify(failovers));
      const [failover] = failovers as [Failover];
      assert.equal(failover.error.code, 'WEFT_ERR_APPROXIMATE_INPUT_LOST', `failed over when its input was lost, not after a reconnect timeout: ${failover.error.message}`);
      assert.match(failover.failedTask, /^count#[01]$/);
      assert.equal(failover.lostPartitions.length, 1, `the killed source's partition is named lost: ${JSON.stringify(failover)}`);
      const lost = failover.lostPartitions[0] as string;
      assert.match(lost, /^words->count#[01]$/);
      // partition words->count#i is source words#i's
      const source = `words#${lost.slice('words->count#'.length)}`;
      assert.ok(failover.tasksToRestart.includes(source) && failover.tasksToRestart.includes(failover.failedTask), `the lost partition's producer restarts with the consumer: ${JSON.stringify(failover)}`);
      const summary = join(dir, 'summary.json');
      await writeFile(summary, run.stdout);
      const plan = await weftCli(['plan', summary, '--json', '--fail', failover.failedTask, '--lost', lost], dir);
      assert.equal(plan.code, 0, plan.stderr);
      assert.deepEqual((JSON.parse(plan.stdout) as { restart: string[] }).restart, failover.tasksToRestart, 'weft plan --fail --lost predicts the failover');
      const counts = (await readFile(output, 'utf8')).split('\n').filter(Boolean).map((line) => line.split('\t')).map(([k, n]) => [k, Number(n)] as [string, number]);
      assert.deepEqual(counts.sort(([a], [b]) => a.localeCompare(b)), reference(), 'every key counted exactly once');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
