// Issue 15's fault runs of the streaming examples, through the real `weft` command line at seeded points:
// the streaming word count and the windowed count, checkpointed every 25 ms, each with a task throwing in
// process and with a worker process SIGKILLed (`--workers 2`, checkpoints relayed to the workers), the
// task and the record drawn from a seed (WEFT_TEST_SEED replays one; the seed is in every message).
// Outputs are checked against naive references computed here from the generated records themselves:
// exactly-once output equal; at-least-once output the same keys with counts at least the reference's
// (records after a checkpoint's first barrier may be counted again after its restore).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { seededRandom } from '@weft/testkit';
import { streamEvent } from '../lib/stream-events.js';
import { streamWord } from '../lib/stream-words.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');
const SEED = Number(process.env['WEFT_TEST_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
const RECORDS = 20_000;
const WINDOW_MS = 1000;

/** Integers in [lo, hi) from @weft/testkit's mulberry32: the test's own seeded draws (task and record of each fault). */
function draws(seed: number): (lo: number, hi: number) => number {
  const random = seededRandom(seed);
  return (lo, hi) => lo + Math.floor(random() * (hi - lo));
}

interface StreamingJob {
  readonly name: string;
  readonly module: string;
  /** The tasks a fault may hit, each with the range of records it surely reads in a run of RECORDS. */
  readonly targets: readonly { readonly task: string; readonly records: readonly [number, number] }[];
  /** `key<TAB>…<TAB>count` lines of the naive computation, by everything but the count. */
  readonly reference: () => Map<string, number>;
}

const JOBS: readonly StreamingJob[] = [
  {
    name: 'streaming word count',
    module: join(root, 'examples', 'streaming-word-count.ts'),
    // each source subtask generates half the records; a count reads the combiners' partial counts, 8 words
    // from each source subtask at every checkpoint: its record 48 comes after the third, so one completed
    targets: [
      { task: 'words#0', records: [2000, 8000] },
      { task: 'words#1', records: [2000, 8000] },
      { task: 'count#0', records: [48, 160] },
      { task: 'count#1', records: [48, 160] },
    ],
    reference: () => {
      const counts = new Map<string, number>();
      for (let seq = 0; seq < RECORDS; seq++) counts.set(streamWord(seq), (counts.get(streamWord(seq)) ?? 0) + 1);
      return counts;
    },
  },
  {
    name: 'windowed count',
    module: join(root, 'examples', 'windowed-count.ts'),
    targets: [
      { task: 'events#0', records: [2000, 8000] },
      { task: 'events#1', records: [2000, 8000] },
      { task: 'count#0', records: [2000, 6000] },
      { task: 'count#1', records: [2000, 6000] },
    ],
    reference: () => {
      const counts = new Map<string, number>();
      for (let seq = 0; seq < RECORDS; seq++) {
        const { key, ts } = streamEvent(seq);
        const start = ts - (ts % WINDOW_MS);
        const id = `${key}\t${start}\t${start + WINDOW_MS}`;
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
      return counts;
    },
  },
];

function weft(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/** The output's counts by everything before the last tab; a key listed twice keeps its largest count (at-least-once). */
async function countsOf(path: string): Promise<{ counts: Map<string, number>; duplicates: number }> {
  const counts = new Map<string, number>();
  let duplicates = 0;
  for (const line of (await readFile(path, 'utf8')).split('\n')) {
    if (line === '') continue;
    assert.match(line, /^[^\t]+(\t-?\d+)*\t\d+$/, `a well-formed line: ${JSON.stringify(line)}`);
    const tab = line.lastIndexOf('\t');
    const key = line.slice(0, tab);
    if (counts.has(key)) duplicates++;
    counts.set(key, Math.max(counts.get(key) ?? 0, Number(line.slice(tab + 1))));
  }
  return { counts, duplicates };
}

describe(`streaming examples under seeded faults (seed ${SEED}; replay with WEFT_TEST_SEED=${SEED})`, () => {
  let dir = '';
  const draw = draws(SEED);
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-streaming-faults-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const runs: { readonly job: StreamingJob; readonly fault: 'throw' | 'kill-worker'; readonly mode: 'exactly-once' | 'at-least-once' }[] = [
    { job: JOBS[0] as StreamingJob, fault: 'throw', mode: 'exactly-once' },
    { job: JOBS[0] as StreamingJob, fault: 'kill-worker', mode: 'exactly-once' },
    { job: JOBS[0] as StreamingJob, fault: 'kill-worker', mode: 'at-least-once' },
    { job: JOBS[1] as StreamingJob, fault: 'throw', mode: 'exactly-once' },
    { job: JOBS[1] as StreamingJob, fault: 'kill-worker', mode: 'exactly-once' },
  ];
  for (const [i, { job, fault, mode }] of runs.entries()) {
    const target = job.targets[draw(0, job.targets.length)] as StreamingJob['targets'][number];
    const at = draw(target.records[0], target.records[1]);
    const spec = `${fault}:${target.task}@${at}`;
    it(`${job.name}, ${mode}, ${fault === 'throw' ? 'in process' : 'on 2 worker processes'}: --inject-faults ${spec} (seed ${SEED})`, async () => {
      const output = join(dir, `run-${i}.tsv`);
      const stores = ['--store', pathToFileURL(join(dir, `store-${i}`)).href, '--meta', `sqlite://${join(dir, `meta-${i}.db`)}`];
      const executor = fault === 'throw' ? [] : ['--workers', '2'];
      const run = await weft(['run', job.module, ...stores, ...executor, '--parallelism', '2', '--checkpoint-interval', '25ms', '--checkpoint-mode', mode, '--inject-faults', spec, '--json', '--', '--records', String(RECORDS), '--rate', '20000', '--output', output], dir);
      assert.equal(run.code, 0, `seed ${SEED}, ${spec}: ${run.stderr}`);
      const summary = JSON.parse(run.stdout) as { failures: number; checkpoints: { completed: number; tasksRestored: number } };
      assert.ok(summary.failures >= 1, `seed ${SEED}, ${spec}: the fault fired`);
      assert.ok(summary.checkpoints.tasksRestored > 0, `seed ${SEED}, ${spec}: restored from a checkpoint: ${JSON.stringify(summary.checkpoints)}`);
      const expected = job.reference();
      const { counts, duplicates } = await countsOf(output);
      if (mode === 'exactly-once') {
        assert.equal(duplicates, 0, `seed ${SEED}, ${spec}: no key twice`);
        assert.deepEqual([...counts].sort(), [...expected].sort(), `seed ${SEED}, ${spec}: exactly the reference`);
      } else {
        assert.deepEqual([...counts.keys()].sort(), [...expected.keys()].sort(), `seed ${SEED}, ${spec}: the reference's keys`);
        for (const [key, n] of expected) assert.ok((counts.get(key) ?? 0) >= n, `seed ${SEED}, ${spec}: ${key} counted ${counts.get(key)} >= ${n}`);
      }
    });
  }
});
