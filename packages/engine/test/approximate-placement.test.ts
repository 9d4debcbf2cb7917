// Where an approximate job's regions may go: once the job started on executors that serve each other's
// pipelined partitions, only those serving now (a cluster executor replacing its worker has no location).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TaskExecutor } from '../src/executor/task-executor.js';
import { ApproximatePlacement } from '../src/job-master/region-placement.js';

const at = { host: '127.0.0.1', port: 1 };
function executor(id: string, location?: typeof at): TaskExecutor & { shuffleLocation: typeof at | undefined } {
  return { id, slots: 1, shuffleLocation: location } as unknown as TaskExecutor & { shuffleLocation: typeof at | undefined };
}

describe('ApproximatePlacement', () => {
  it('offers only executors that serve now, once the job started on serving ones', () => {
    const a = executor('a', at);
    const b = executor('b', at);
    const placement = new ApproximatePlacement(true);
    assert.deepEqual(placement.free([[a, 1], [b, 1]]).map(([e]) => e.id), ['a', 'b']);
    // b replaces its worker: no location until the new one is ready
    b.shuffleLocation = undefined;
    assert.deepEqual(placement.free([[a, 1], [b, 1]]).map(([e]) => e.id), ['a']);
    assert.deepEqual(placement.free([[b, 1]]), [], 'nothing to offer: the region waits for a serving executor');
    b.shuffleLocation = at;
    assert.deepEqual(placement.free([[b, 1]]).map(([e]) => e.id), ['b']);
  });

  it('offers everything to a job on executors serving nobody (in process, or not approximate)', () => {
    const local = executor('inprocess');
    assert.deepEqual(new ApproximatePlacement(true).free([[local, 2]]).map(([e]) => e.id), ['inprocess']);
    const gone = executor('b');
    assert.deepEqual(new ApproximatePlacement(false).free([[executor('a', at), 1], [gone, 1]]).map(([e]) => e.id), ['a', 'b']);
  });

  it('decides at the first call that sees free slots, not at one that sees none', () => {
    const b = executor('b', at);
    const placement = new ApproximatePlacement(true);
    assert.deepEqual(placement.free([]), []);
    assert.deepEqual(placement.free([[b, 1]]).map(([e]) => e.id), ['b']);
    b.shuffleLocation = undefined;
    assert.deepEqual(placement.free([[b, 1]]), []);
  });
});
