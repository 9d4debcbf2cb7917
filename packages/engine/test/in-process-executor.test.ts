// The in-process task executor opens its own pipelined shuffle master and environments when it starts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineJob, runJob } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';

describe('in-process task executor', () => {
  it('closes the pipelined shuffle it opened when its blocking environment cannot be created', async () => {
    const pipelined = testingNoShuffleFactory();
    const blocking = {
      ...testingNoShuffleFactory(),
      createShuffleEnvironment: () => {
        throw new Error('no blocking environment here');
      },
    };
    await assert.rejects(runJob({ job: defineJob((ctx) => ctx.range(0, 10).collect('n')), parallelism: 1, shuffle: { pipelined, blocking } }), /no blocking environment here/);
    assert.deepEqual(pipelined.calls, ['start', 'registerJob', 'environment.close', 'unregisterJob', 'close']);
  });
});
