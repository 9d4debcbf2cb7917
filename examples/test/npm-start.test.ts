// `npm start` (scripts/start.mjs) end to end on a tiny corpus written into a temporary directory: it
// generates the corpus, runs word count on worker processes over the embedded default shuffle, and prints
// the top words and the summary.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { countWordsByScanning } from './support/word-reference.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

function start(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base = { ...process.env };
  delete base['WEFT_STORE'];
  delete base['WEFT_META'];
  return new Promise((resolve) => {
    execFile(process.execPath, [join(root, 'scripts', 'start.mjs'), ...args], { cwd: root, maxBuffer: 64 * 1024 * 1024, env: { ...base, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

describe('npm start', () => {
  it('counts the words of a generated corpus and prints the top words and a summary, all under WEFT_START_DIR', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-start-'));
    try {
      const run = await start(['--parallelism', '2', '--workers', '2'], { WEFT_START_CORPUS_MB: '0.25', WEFT_START_DIR: dir });
      assert.equal(run.code, 0, run.stderr);
      const corpus = join(dir, 'corpus', 'corpus-0.25mb.txt');
      const counts = join(dir, 'word-count', 'counts.tsv');
      const expected = countWordsByScanning(await readFile(corpus, 'utf8'));
      const top = [...expected].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 10);
      assert.ok(run.stdout.includes(`top words:\n${top.map(([w, n]) => `  ${w}\t${n}\n`).join('')}`), run.stdout);
      assert.match(run.stdout, /^Job word-count succeeded in .* \(parallelism 2, 2 workers × 1 slot, ALL_EDGES_BLOCKING\)$/m);
      assert.match(run.stdout, /^ {2}\d+ tasks in \d+ pipelined regions; \d+ attempts deployed$/m);
      assert.match(run.stdout, /^ {2}edges:\n {4}\S+ +ALL_TO_ALL BLOCKING/m);
      assert.ok(run.stdout.includes(`Every word's count: ${counts}`), run.stdout);
      const written = new Map<string, number>();
      for (const line of (await readFile(counts, 'utf8')).split('\n')) {
        if (line === '') continue;
        const tab = line.lastIndexOf('\t');
        written.set(line.slice(0, tab), Number(line.slice(tab + 1)));
      }
      assert.deepEqual(written, expected);
      assert.ok(existsSync(join(dir, 'shuffle-meta.db')), 'the blocking shuffle kept its metadata under WEFT_START_DIR');
      assert.equal(existsSync(join(root, '.weft', 'corpus', 'corpus-0.25mb.txt')), false, "nothing written to the repository's .weft/");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a corpus size that is not a positive number with exit code 2', async () => {
    const run = await start([], { WEFT_START_CORPUS_MB: 'lots', WEFT_START_DIR: join(tmpdir(), 'weft-start-never') });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /WEFT_START_CORPUS_MB must be a number > 0, got "lots"/);
    assert.equal(existsSync(join(tmpdir(), 'weft-start-never')), false);
  });
});
