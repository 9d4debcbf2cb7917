// scripts/failure-summary-reporter.mjs: after a run, what failed again at the end — each failed test's file,
// name and message, not the suite around it, not what passed; nothing at all when every test passed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const reporter = fileURLToPath(new URL('../failure-summary-reporter.mjs', import.meta.url));

function runTests(file: string): string {
  const args = ['--test', '--test-reporter=tap', '--test-reporter-destination=stdout', `--test-reporter=${reporter}`, '--test-reporter-destination=stdout', file];
  // (without NODE_TEST_CONTEXT, which the outer runner sets: with it the inner run would report to the outer one)
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  return spawnSync(process.execPath, args, { encoding: 'utf8', env }).stdout;
}

describe('the failure summary reporter', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-failure-summary-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('lists each failed test with its file and message after the last result', async () => {
    const file = join(dir, 'some.test.mjs');
    await writeFile(
      file,
      `import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
describe('windows', () => {
  it('counts every record', () => assert.equal(28, 29, 'one window one short'));
  it('passes', () => {});
});
it('throws', () => { throw new Error('the job failed'); });
`,
    );
    const out = runTests(file);
    const summary = out.slice(out.lastIndexOf('# duration_ms'));
    assert.match(summary, /# failed tests: 2\n/);
    assert.match(summary, new RegExp(`# ✗ ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: counts every record\n#     one window one short`));
    assert.match(summary, /# ✗ .*: throws\n#     the job failed/);
    assert.doesNotMatch(summary, /✗ .*: (passes|windows)\n/);
  });

  it('prints nothing when every test passed', async () => {
    const file = join(dir, 'green.test.mjs');
    await writeFile(file, `import { it } from 'node:test';\nit('passes', () => {});\n`);
    const out = runTests(file);
    assert.match(out, /# pass 1\n/);
    assert.doesNotMatch(out, /failed tests/);
  });
});
