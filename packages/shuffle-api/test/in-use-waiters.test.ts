// InUseWaiters: a waiter resolves once the reported count is at most its own limit — not before, and not
// because another waiter's limit was reached — or when all are woken.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { InUseWaiters } from '@weft/shuffle-api';

const settled = async (p: Promise<void>): Promise<boolean> => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

describe('InUseWaiters', () => {
  it('resolves each waiter once the count falls to its limit, and at once when it already is', async () => {
    const waiters = new InUseWaiters();
    assert.equal(await settled(waiters.whenAtMost(3, 4)), true, 'already at most the limit');
    const atFour = waiters.whenAtMost(6, 4);
    const atTwo = waiters.whenAtMost(6, 2);
    waiters.changed(5);
    assert.deepEqual([await settled(atFour), await settled(atTwo)], [false, false]);
    waiters.changed(4);
    assert.deepEqual([await settled(atFour), await settled(atTwo)], [true, false], 'only the waiter whose limit was reached');
    waiters.changed(2);
    assert.equal(await settled(atTwo), true);
  });

  it('wakeAll resolves every waiter whatever the count', async () => {
    const waiters = new InUseWaiters();
    const waiting = [waiters.whenAtMost(9, 1), waiters.whenAtMost(9, 0)];
    waiters.wakeAll();
    assert.deepEqual(await Promise.all(waiting.map(settled)), [true, true]);
  });
});
