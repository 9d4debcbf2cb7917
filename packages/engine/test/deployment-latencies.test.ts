// Deployment latency per task (JobResult.deploymentLatency): from the job master handing a deployment to
// an executor to its task's `running` report, on the job master's clock.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineJob, runJob } from '@weft/engine';
import { DeploymentLatencies } from '../src/job-master/deployment-latencies.js';
import { testingNoShuffleFactory } from './support/no-shuffle.js';

describe('deployment latencies', () => {
  it('times each attempt from its deployment to its running report, with nearest-rank percentiles', () => {
    let now = 0;
    const latencies = new DeploymentLatencies(() => now);
    latencies.deployed(Array.from({ length: 100 }, (_, i) => `a${i}`));
    for (let i = 0; i < 100; i++) {
      now = i + 1;
      latencies.running(`a${i}`);
    }
    latencies.running('a0'); // reported twice: counted once
    latencies.running('never-deployed');
    latencies.deployed(['cancelled-before-running']);
    assert.deepEqual(latencies.summary(), { tasks: 100, p50Ms: 50, p99Ms: 99, maxMs: 100 });
    assert.deepEqual(new DeploymentLatencies().summary(), { tasks: 0, p50Ms: 0, p99Ms: 0, maxMs: 0 });
  });

  it('a run reports one latency per task it deployed', async () => {
    const none = testingNoShuffleFactory();
    const result = await runJob({ job: defineJob((ctx) => ctx.range(0, 1000).map((n) => n * 2).collect('out')), parallelism: 3, shuffle: { pipelined: none, blocking: none } });
    assert.equal(result.status, 'succeeded', String(result.error));
    assert.equal(result.deploymentLatency.tasks, result.tasks);
    assert.ok(result.deploymentLatency.p50Ms >= 0 && result.deploymentLatency.p99Ms >= result.deploymentLatency.p50Ms && result.deploymentLatency.maxMs >= result.deploymentLatency.p99Ms);
  });
});
