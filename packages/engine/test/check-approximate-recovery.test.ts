// What approximate recovery refuses, and what it runs on: in process, local workers that serve each other's
// pipelined partitions; not a provider's executors, not several workers over the in-memory pipelined shuffle.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isEngineError } from '@weft/engine';
import { checkApproximateExecutors, checkApproximateRecovery } from '../src/job-master/check-approximate-recovery.js';

describe('checkApproximateRecovery', () => {
  it('runs in process and on worker processes, refuses a provider naming its kind', () => {
    assert.equal(checkApproximateRecovery({ executorKind: 'inprocess', checkpointing: undefined }), undefined);
    assert.equal(checkApproximateRecovery({ executorKind: 'workers', checkpointing: undefined }), undefined);
    assert.throws(
      () => checkApproximateRecovery({ executorKind: 'remote', checkpointing: undefined }),
      (error: unknown) => isEngineError(error, 'WEFT_ERR_APPROXIMATE_REFUSED') && /executor 'remote'/.test(error.message) && error.context['conflictsWith'] !== undefined,
    );
  });

  it('refuses several executors once one of them serves its pipelined partitions only to itself, naming it', () => {
    const at = { host: '127.0.0.1', port: 1 };
    checkApproximateExecutors([{ id: 'inprocess-0' }]);
    checkApproximateExecutors([{ id: 'worker-0' }]);
    checkApproximateExecutors([{ id: 'worker-0', shuffleLocation: at }, { id: 'worker-1', shuffleLocation: at }]);
    assert.throws(
      () => checkApproximateExecutors([{ id: 'worker-0', shuffleLocation: at }, { id: 'worker-1' }]),
      (error: unknown) => isEngineError(error, 'WEFT_ERR_APPROXIMATE_REFUSED') && /executor worker-1/.test(error.message) && /--pipelined-shuffle network/.test(error.message),
    );
  });
});
