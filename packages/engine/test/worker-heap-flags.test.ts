import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WORKER_MALLOC_MMAP_THRESHOLD_BYTES, WORKER_MAX_SEMI_SPACE_MIB, withWorkerHeapFlags, withWorkerMallocEnv } from '../src/executor/worker-process.js';

describe("worker processes' V8 heap flags (withWorkerHeapFlags)", () => {
  it('gives a worker a small young generation by default, before its own options', () => {
    assert.deepEqual(withWorkerHeapFlags(['--import', 'file:///tsx.mjs'], undefined), [`--max-semi-space-size=${WORKER_MAX_SEMI_SPACE_MIB}`, '--import', 'file:///tsx.mjs']);
    assert.deepEqual(withWorkerHeapFlags([], '--enable-source-maps'), [`--max-semi-space-size=${WORKER_MAX_SEMI_SPACE_MIB}`]);
  });

  it("leaves the semi-space size to the worker's exec arguments or NODE_OPTIONS when either sets one, in either spelling", () => {
    assert.deepEqual(withWorkerHeapFlags(['--max-semi-space-size=16'], undefined), ['--max-semi-space-size=16']);
    assert.deepEqual(withWorkerHeapFlags(['--max_semi_space_size', '32'], undefined), ['--max_semi_space_size', '32']);
    assert.deepEqual(withWorkerHeapFlags(['--import', 'x'], '--enable-source-maps --max-semi-space-size=64'), ['--import', 'x']);
    assert.deepEqual(withWorkerHeapFlags([], '--max_semi_space_size=8'), []);
  });

  it('does not bound the old generation (user code may keep a large heap)', () => {
    assert.ok(!withWorkerHeapFlags([], undefined).some((a) => /old[-_]space|max[-_]heap/.test(a)));
  });

  it("fixes glibc's mmap threshold in a worker's environment unless the environment sets one", () => {
    const env = { PATH: '/bin' };
    assert.deepEqual(withWorkerMallocEnv(env), { PATH: '/bin', MALLOC_MMAP_THRESHOLD_: String(WORKER_MALLOC_MMAP_THRESHOLD_BYTES) });
    assert.deepEqual(env, { PATH: '/bin' }, 'the given environment is not changed');
    assert.deepEqual(withWorkerMallocEnv({ MALLOC_MMAP_THRESHOLD_: '4194304' }), { MALLOC_MMAP_THRESHOLD_: '4194304' });
  });
});
