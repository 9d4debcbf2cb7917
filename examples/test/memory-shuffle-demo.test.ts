import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { runDemo } from '../memory-shuffle-demo.js';

describe('in-memory shuffle demo', () => {
  it('moves every record from 3 producers to 5 consumers and says the multiset is intact', async () => {
    const result = await runDemo(3, 5, 20_000);
    assert.equal(result.recordsSent, 60_000);
    assert.equal(result.recordsReceived, 60_000);
    assert.equal(result.receivedFingerprint, result.sentFingerprint);
    assert.equal(result.intact, true);
  });

  it('prints a JSON summary and exits 2 on a bad argument', () => {
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', 'examples/memory-shuffle-demo.ts', ...args], { encoding: 'utf8' });
    const ok = run('--records', '10000', '--json');
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).recordsReceived, 10_000);
    const bad = run('--producers', '0');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--producers must be a positive integer/);
  });
});
