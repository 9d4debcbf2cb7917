// `weft run --workers 2 --exchange-mode ALL_EDGES_PIPELINED`, as a user runs it (the bin shim): the one
// pipelined region of word count spreads over both worker processes (@weft/shuffle-network between them),
// its output equals a naive count computed here — also when a worker is SIGKILLed mid-region (its
// consumers lose their connections, the region fails over through the ordinary path, nothing hangs).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runCli } from '@weft/cli';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const wordCount = fileURLToPath(new URL('../../../examples/word-count.ts', import.meta.url));

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function weft(args: readonly string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd, maxBuffer: 64 * 1024 * 1024, timeout: 90_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/** The reference: words as maximal runs of non-whitespace, counted as written. */
function naiveCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const word of text.split(/\s+/)) if (word !== '') counts.set(word, (counts.get(word) ?? 0) + 1);
  return counts;
}

async function readCounts(path: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const line of (await readFile(path, 'utf8')).split('\n')) {
    if (line === '') continue;
    const tab = line.lastIndexOf('\t');
    const word = line.slice(0, tab);
    assert.equal(counts.has(word), false, `word ${word} written twice`);
    counts.set(word, Number(line.slice(tab + 1)));
  }
  return counts;
}

interface RunJson {
  status: string;
  regions: number;
  placement: { tasksPerExecutor: Record<string, number>; spreadDeployments: number };
  failovers: { error: { code: string } }[];
  executorsLost: { taskExecutorId: string; reason: string }[];
}

describe('weft run --workers 2 --exchange-mode ALL_EDGES_PIPELINED (network pipelined shuffle)', () => {
  let dir = '';
  let input = '';
  let expected = new Map<string, number>();
  const flags = ['--workers', '2', '--parallelism', '2', '--exchange-mode', 'ALL_EDGES_PIPELINED', '--json'];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-run-pipelined-network-'));
    // many distinct words, so the combiner leaves thousands of records to cross the workers
    const lines = Array.from({ length: 6000 }, (_, i) => `w${i} x${i % 13}\u00a0y${i % 7}\tword  hello w${i % 500}`);
    const text = `${lines.join('\n')}\n`;
    input = join(dir, 'corpus.txt');
    await writeFile(input, text);
    expected = naiveCounts(text);
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('spreads the one pipelined region over both workers and counts what a naive count counts', async () => {
    const run = await weft(['run', wordCount, ...flags, '--', '--input', input, '--output', join(dir, 'clean.tsv')], dir);
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout) as RunJson;
    assert.equal(result.status, 'succeeded');
    assert.equal(result.regions, 1);
    assert.equal(result.placement.spreadDeployments, 1);
    assert.deepEqual(Object.keys(result.placement.tasksPerExecutor).sort(), ['worker-0', 'worker-1']);
    assert.ok(Object.values(result.placement.tasksPerExecutor).every((n) => n >= 2), JSON.stringify(result.placement));
    assert.deepEqual(await readCounts(join(dir, 'clean.tsv')), expected);
  });

  it('fails the region over when a worker is SIGKILLed mid-region, and still counts what a naive count counts', async () => {
    // count#1 runs on the second worker (slot sharing: subtask 1 of every vertex shares the second slot)
    const run = await weft(['run', wordCount, ...flags, '--inject-faults', 'kill-worker:count#1@1500', '--', '--input', input, '--output', join(dir, 'killed.tsv')], dir);
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout) as RunJson;
    assert.equal(result.status, 'succeeded');
    assert.equal(result.executorsLost.length, 1, JSON.stringify(result.executorsLost));
    assert.match(result.executorsLost[0]?.reason ?? '', /SIGKILL/);
    assert.ok(result.failovers.length >= 1);
    // the lost worker's tasks, or their consumers on the other worker that lost their connections to it
    for (const failover of result.failovers) assert.ok(['WEFT_ERR_TASK_EXECUTOR_LOST', 'SHF_ERR_CONNECTION_LOST'].includes(failover.error.code), JSON.stringify(failover.error));
    assert.ok(result.placement.spreadDeployments >= 1);
    assert.deepEqual(await readCounts(join(dir, 'killed.tsv')), expected);
  });
});

describe('weft run --pipelined-shuffle', () => {
  async function inProcess(args: string[]): Promise<{ code: number; stderr: string }> {
    let stderr = '';
    const code = await runCli(args, { stdout: { write: () => {} }, stderr: { write: (t: string) => (stderr += t) }, cwd: tmpdir(), env: {} });
    return { code, stderr };
  }

  it('refuses a shuffle it does not know, naming the choices (exit 2)', async () => {
    const run = await inProcess(['run', wordCount, '--pipelined-shuffle', 'carrier-pigeon']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--pipelined-shuffle must be memory or network, got "carrier-pigeon"/);
  });

  it('refuses a --buffer-timeout that is not an integer >= 0 (exit 2), and runs a pipelined job with --buffer-timeout 0', async () => {
    for (const value of ['-1', '1.5', 'soon']) {
      const run = await inProcess(['run', wordCount, `--buffer-timeout=${value}`]);
      assert.equal(run.code, 2, value);
      assert.match(run.stderr, /--buffer-timeout must be an integer >= 0/);
    }
    const dir = await mkdtemp(join(tmpdir(), 'weft-run-buffer-timeout-'));
    try {
      const text = 'a b a\nc a b\n';
      await writeFile(join(dir, 'in.txt'), text);
      let stderr = '';
      const code = await runCli(['run', wordCount, '--executor', 'inprocess', '--parallelism', '2', '--exchange-mode', 'ALL_EDGES_PIPELINED', '--buffer-timeout', '0', '--', '--input', join(dir, 'in.txt'), '--output', join(dir, 'out.tsv')], { stdout: { write: () => {} }, stderr: { write: (t: string) => (stderr += t) }, cwd: dir, env: {} });
      assert.equal(code, 0, stderr);
      assert.deepEqual(await readCounts(join(dir, 'out.tsv')), naiveCounts(text));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses the network shuffle without worker processes (exit 2)', async () => {
    const run = await inProcess(['run', wordCount, '--executor', 'inprocess', '--pipelined-shuffle', 'network']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--pipelined-shuffle network needs worker processes/);
  });
});
