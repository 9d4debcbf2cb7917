// ConditionWaiters: a wait resolves at once when the condition holds, at the first check after it came to
// hold, or at its timeout — never at a check while it does not hold.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { ConditionWaiters } from '../src/job-master/condition-waiters.js';

const settled = async (p: Promise<void>): Promise<boolean> => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

describe('ConditionWaiters', () => {
  it('resolves at once when the condition holds', async () => {
    assert.equal(await settled(new ConditionWaiters(() => true).wait(60_000)), true);
  });

  it('resolves every waiter at the first check after the condition came to hold, not before', async () => {
    let holds = false;
    const waiters = new ConditionWaiters(() => holds);
    const a = waiters.wait(60_000);
    const b = waiters.wait(60_000);
    waiters.check();
    assert.equal(await settled(a), false, 'a check while it does not hold resolves nothing');
    holds = true;
    assert.equal(await settled(a), false, 'nothing before a check');
    waiters.check();
    assert.equal(await settled(a), true);
    assert.equal(await settled(b), true);
  });

  it('resolves at its timeout when the condition never holds', async () => {
    const started = performance.now();
    await new ConditionWaiters(() => false).wait(30);
    assert.ok(performance.now() - started >= 25);
  });
});
