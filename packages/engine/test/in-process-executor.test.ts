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

  it('starts the blocking environment before any task, and fails the job with its error when it cannot start', async () => {
    const pipelined = testingNoShuffleFactory();
    const calls: string[] = [];
    const base = testingNoShuffleFactory();
    const blocking = {
      ...base,
      createShuffleEnvironment: (request: Parameters<typeof base.createShuffleEnvironment>[0]) => ({
        ...base.createShuffleEnvironment(request),
        start: async () => {
          calls.push('environment.start');
          throw new Error('meta: redis://127.0.0.1:1 is unreachable');
        },
        close: async () => void calls.push('environment.close'),
      }),
    };
    let ran = false;
    const job = defineJob((ctx) =>
      ctx
        .range(0, 10)
        .map((n) => {
          ran = true;
          return n;
        })
        .collect('n'),
    );
    await assert.rejects(runJob({ job, parallelism: 1, shuffle: { pipelined, blocking } }), /redis:\/\/127\.0\.0\.1:1 is unreachable/);
    assert.equal(ran, false, 'no task ran');
    assert.deepEqual(calls, ['environment.start', 'environment.close']);
    assert.deepEqual(pipelined.calls, ['start', 'registerJob', 'environment.close', 'unregisterJob', 'close']);
  });
});
