// `weft task-executor` start-up faults, in-process: a cluster Redis that cannot be reached — a plain URL
// with nothing listening, a Sentinel URL where no Sentinel answers — is refused with exit 2 naming
// --cluster's URL within the connect timeout; it never waits forever.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CliIo, runCli } from '@weft/cli';
import { createTempDir } from '@weft/testkit';

function io(cwd: string): CliIo & { err: () => string } {
  let err = '';
  return { stdout: { write: () => {} }, stderr: { write: (t: string) => (err += t) }, cwd, env: { WEFT_SHUFFLE_SECRET: 'task-executor-test-secret-0123456789' }, err: () => err };
}

describe('weft task-executor start-up', () => {
  for (const url of ['redis://127.0.0.1:1/1', 'redis+sentinel://127.0.0.1:1/mymaster/1', 'redis+sentinel://127.0.0.1:1,127.0.0.1:2/mymaster/1']) {
    it(`refuses ${url} (nothing listening) with exit 2 naming the URL`, async () => {
      await using dir = await createTempDir('weft-task-executor-');
      const t = io(dir.path);
      assert.equal(await runCli(['task-executor', '--cluster', url, '--dir', dir.path], t), 2);
      assert.match(t.err(), new RegExp(`--cluster: cannot reach Redis at ${url.replace(/[.+/]/g, (c) => `\\${c}`)}`));
      assert.doesNotMatch(t.err(), /invalid setting cluster/, 'the flag, in the user\'s words');
      assert.doesNotMatch(t.err(), /\n\s+at /, 'no stack trace');
    });
  }
});
