// Every example refuses bad job arguments and an --input it cannot read with exit code 2 and a message
// naming the flag or the path (docs/DESIGN.md, command-line conventions), before any task runs.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');

function weft(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

describe('examples refuse bad input with exit code 2', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-bad-input-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const cases: [example: string, args: string[], message: RegExp][] = [
    ['word-count.ts', ['--top', '0'], /job argument --top expected an integer >= 1, got "0"/],
    ['word-count.ts', ['--top', 'ten'], /job argument --top expected an integer >= 1, got "ten"/],
    ['word-count.ts', ['--lines', '-5'], /job argument --lines expected an integer >= 0, got "-5"/],
    ['word-count.ts', ['--input', 'missing.txt'], /operator "read-lines" cannot read .*missing\.txt: no such file or directory/],
    ['terasort.ts', ['--records', '1.5'], /job argument --records expected an integer >= 0, got "1\.5"/],
    ['terasort.ts', ['--input', 'missing.txt'], /operator "read-records" cannot read .*missing\.txt: no such file or directory/],
    ['tpch-revenue.ts', ['--customers', '0'], /job argument --customers expected an integer >= 1, got "0"/],
    ['tpch-revenue.ts', ['--input', 'no-tables'], /operator "read-customers" cannot read .*no-tables\/customer\.tbl: no such file or directory/],
  ];
  for (const [example, args, message] of cases) {
    it(`${example} ${args.join(' ')}`, async () => {
      const run = await weft(['run', join(root, 'examples', example), '--executor', 'inprocess', '--', ...args], dir);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
      assert.doesNotMatch(run.stderr, /internal error|TypeError|\n\s+at /, 'a message, not a crash');
      assert.equal(run.stdout, '', 'nothing ran');
    });
  }
});
