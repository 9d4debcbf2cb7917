// `weft run --inject-faults restart-redis` against a real redis-server: a true restart (DEBUG RESTART)
// where the server allows it, otherwise every client connection dropped; either way the job recovers
// and writes the same counts as a run without the fault.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runCli } from '@weft/cli';
import { startRedis } from '@weft/testkit';

const wordCount = fileURLToPath(new URL('../../../examples/word-count.ts', import.meta.url));

async function weft(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) }, cwd, env: {} });
  return { code, stdout, stderr };
}

async function sortedLines(path: string): Promise<string[]> {
  return (await readFile(path, 'utf8')).split('\n').filter((l) => l !== '').sort();
}

describe('weft run --inject-faults restart-redis', () => {
  let dir = '';
  let expected: string[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-redis-faults-'));
    const clean = await weft(['run', wordCount, '--parallelism', '2', '--executor', 'inprocess', '--', '--lines', '3000', '--output', 'clean.tsv'], dir);
    assert.equal(clean.code, 0, clean.stderr);
    expected = await sortedLines(join(dir, 'clean.tsv'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const cases: [string, string[], RegExp][] = [
    ['restarts a server that allows DEBUG', ['--enable-debug-command', 'yes'], /restart-redis before deployment \d+: restarted Redis at 127\.0\.0\.1:\d+ \(DEBUG RESTART\)/],
    ['drops every connection of a server that does not', [], /restart-redis before deployment \d+: dropped \d+ client connections of Redis at 127\.0\.0\.1:\d+ \(DEBUG RESTART is not allowed there/],
  ];
  for (const [what, args, detail] of cases) {
    it(`${what}, and the job still writes exactly its output`, async () => {
      await using redis = await startRedis({ args });
      const output = `counts-${args.length}.tsv`;
      const run = await weft(['run', wordCount, '--parallelism', '2', '--executor', 'inprocess', '--meta', redis.url, '--store', pathToFileURL(join(dir, `store-${args.length}`)).href, '--inject-faults', 'seed=2,restart-redis', '--', '--lines', '3000', '--output', output], dir);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, detail);
      assert.deepEqual(await sortedLines(join(dir, output)), expected);
    });
  }
});
