import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const ciRun = fileURLToPath(new URL('../../.ci/run', import.meta.url));

/**
 * Runs .ci/run with a stand-in `npm` first on PATH that logs its arguments and fails for the command
 * named in `failOn`; returns the exit status and the npm commands run, in order.
 */
function runCi(failOn?: 'ci' | 'test'): { status: number | null; calls: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'weft-ci-run-'));
  try {
    const log = join(dir, 'calls');
    writeFileSync(log, '');
    writeFileSync(join(dir, 'npm'), `#!/usr/bin/env bash\necho "$*" >> '${log}'\n[ "$1" = "${failOn ?? ''}" ] && exit 3\nexit 0\n`);
    chmodSync(join(dir, 'npm'), 0o755);
    const result = spawnSync(ciRun, [], { env: { ...process.env, PATH: `${dir}:${process.env['PATH'] ?? ''}` }, encoding: 'utf8' });
    return { status: result.status, calls: readFileSync(log, 'utf8').split('\n').filter((line) => line !== '') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('.ci/run', () => {
  it("runs the README's test command, npm ci then npm test, and exits 0 when both pass", () => {
    assert.deepEqual(runCi(), { status: 0, calls: ['ci', 'test'] });
  });

  it('exits non-zero when npm ci fails, without running the tests', () => {
    const r = runCi('ci');
    assert.notEqual(r.status, 0);
    assert.deepEqual(r.calls, ['ci']);
  });

  it('exits non-zero when the tests fail', () => {
    const r = runCi('test');
    assert.notEqual(r.status, 0);
    assert.deepEqual(r.calls, ['ci', 'test']);
  });

  it('says what CI does with it (a clean clone of main) without claiming to clone anything itself', () => {
    const text = readFileSync(ciRun, 'utf8');
    assert.match(text, /^set -euo pipefail$/m);
    assert.match(text, /CI runs this script on a fresh clean clone of main/);
    assert.match(text, /clones nothing/);
  });
});
