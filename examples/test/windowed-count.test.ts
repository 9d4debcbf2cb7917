// The windowed count example through the real `weft` command line: a checkpointed run whose window task
// throws at a seeded point restarts from its latest checkpoint and writes exactly the windows of a
// naive grouping by key and window start computed here.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { streamEvent } from '../lib/stream-events.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');
const job = join(root, 'examples', 'windowed-count.ts');
const RECORDS = 20_000;
const WINDOW_MS = 1000;

function weft(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/** `key<TAB>start<TAB>end<TAB>count` per key and window, from the events themselves, sorted. */
function reference(records: number): string[] {
  const counts = new Map<string, number>();
  for (let seq = 0; seq < records; seq++) {
    const { key, ts } = streamEvent(seq);
    const start = ts - (ts % WINDOW_MS);
    const id = `${key}\t${start}\t${start + WINDOW_MS}`;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return [...counts].map(([id, n]) => `${id}\t${n}`).sort();
}

describe('examples/windowed-count.ts', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-windowed-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('restarts a checkpointed run after a seeded throw in its window task and writes the naive windows', async () => {
    const output = join(dir, 'windows.tsv');
    const stores = ['--store', pathToFileURL(join(dir, 'store')).href, '--meta', `sqlite://${join(dir, 'meta.db')}`];
    const run = await weft(['run', job, ...stores, '--parallelism', '2', '--checkpoint-interval', '25ms', '--inject-faults', 'throw:count#1@3000', '--json', '--', '--records', String(RECORDS), '--rate', '30000', '--output', output], dir);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as { failures: number; checkpoints: { tasksRestored: number }; vertices: { lateRecordsDropped?: number }[] };
    assert.equal(summary.failures, 1);
    assert.ok(summary.checkpoints.tasksRestored > 0, JSON.stringify(summary.checkpoints));
    assert.equal(summary.vertices.reduce((n, v) => n + (v.lateRecordsDropped ?? 0), 0), 0);
    const lines = (await readFile(output, 'utf8')).split('\n').filter((l) => l !== '').sort();
    assert.deepEqual(lines, reference(RECORDS));
  });
});
