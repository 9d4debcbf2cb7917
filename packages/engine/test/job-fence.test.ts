// JobFence: what a run that a store refused says. A refusal naming a newer epoch: that epoch took the job
// over. One naming an epoch not above the run's own (a Redis restarted empty, its lease record gone): no
// newer run exists, the store lost the lease — before, the message said "epoch 0 took the job over".
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { noopLogger } from '@weft/shuffle-api';
import { EngineError } from '../src/errors/engine-error.js';
import { JobFence } from '../src/job-master/job-fence.js';

const refusal = (newestEpoch: number) => new EngineError('WEFT_ERR_FENCED', `append refused, newest epoch ${newestEpoch}`, { context: { jobId: 'j', epoch: 3, newestEpoch } });

describe('JobFence', () => {
  it('names the newer epoch that took the job over', () => {
    const fence = new JobFence({ jobId: 'j' as never, epoch: 3, logger: noopLogger });
    assert.equal(fence.observe(new Error('wrapped', { cause: refusal(4) })), true);
    assert.match(fence.error!.message, /this job master \(epoch 3\) was fenced: epoch 4 took the job over/);
    assert.equal(fence.error!.context['newestEpoch'], 4);
  });

  it('says the store lost the lease when the newest epoch it names is not above the run own', () => {
    for (const newest of [0, 3]) {
      const fence = new JobFence({ jobId: 'j' as never, epoch: 3, logger: noopLogger });
      assert.equal(fence.observe(refusal(newest)), true);
      assert.doesNotMatch(fence.error!.message, /took the job over/);
      assert.match(fence.error!.message, new RegExp(`no longer holds this run's lease \\(its newest epoch for the job is ${newest}: the store lost data\\?\\)`));
    }
  });

  it('is not fenced by other errors', () => {
    const fence = new JobFence({ jobId: 'j' as never, epoch: 3, logger: noopLogger });
    assert.equal(fence.observe(new EngineError('WEFT_ERR_EVENT_LOG', 'the store kept failing')), false);
    assert.equal(fence.isFenced, false);
  });
});
