// Where a consumer of an approximate edge finds its producers' partitions in an executor, and how long it waits.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ShuffleDescriptor } from '@weft/shuffle-api';
import { isEngineError } from '@weft/engine';
import { ApproximatePartitions } from '../src/executor/approximate-partitions.js';

const descriptor = (partitionId: string, producerId: string): ShuffleDescriptor => ({ partition: { partitionId }, producer: { producerId, attempt: Number(producerId.split('@')[1]) } }) as unknown as ShuffleDescriptor;

describe('ApproximatePartitions', () => {
  it('answers at once for a registered partition, and a waiting consumer at the registration', async () => {
    const partitions = new ApproximatePartitions();
    const signal = new AbortController().signal;
    const waiting = partitions.descriptorOf({ partitionId: 'a->b#0', executionVertexId: 'b#0', timeoutMs: 10_000, signal });
    assert.equal(partitions.waiting, 1);
    partitions.publish(descriptor('a->b#0', 'a#0@0'));
    assert.equal(((await waiting) as unknown as { producer: { producerId: string } }).producer.producerId, 'a#0@0');
    partitions.publish(descriptor('a->b#0', 'a#0@1'));
    const now = await partitions.descriptorOf({ partitionId: 'a->b#0', executionVertexId: 'b#0', timeoutMs: 1, signal });
    assert.equal((now as unknown as { producer: { producerId: string } }).producer.producerId, 'a#0@1', 'the latest attempt');
    assert.equal(partitions.waiting, 0);
  });

  it('keeps the newest attempt when an older one is published after it (a deployment built before the job master named the new attempt)', async () => {
    const partitions = new ApproximatePartitions();
    partitions.publish(descriptor('a->b#0', 'a#0@2'));
    partitions.publish(descriptor('a->b#0', 'a#0@1'));
    assert.equal(partitions.latest('a->b#0')?.producer.producerId, 'a#0@2');
    const now = await partitions.descriptorOf({ partitionId: 'a->b#0', executionVertexId: 'b#0', timeoutMs: 1, signal: new AbortController().signal });
    assert.equal(now.producer.producerId, 'a#0@2');
    assert.equal(partitions.latest('a->c#0'), undefined);
  });

  it('fails a consumer whose partition is not registered within the timeout, naming task, partition and timeout', async () => {
    const partitions = new ApproximatePartitions();
    await assert.rejects(
      partitions.descriptorOf({ partitionId: 'a->b#1', executionVertexId: 'b#0', timeoutMs: 5, signal: new AbortController().signal }),
      (error: unknown) => isEngineError(error, 'WEFT_ERR_APPROXIMATE_RECONNECT_TIMEOUT') && error.context['partitionId'] === 'a->b#1' && error.context['executionVertexId'] === 'b#0' && error.context['timeoutMs'] === 5,
    );
    assert.equal(partitions.waiting, 0, 'nothing left waiting');
  });

  it('stops waiting when the task is cancelled, with the cancellation as the reason', async () => {
    const partitions = new ApproximatePartitions();
    const controller = new AbortController();
    const waiting = partitions.descriptorOf({ partitionId: 'a->b#0', executionVertexId: 'b#0', timeoutMs: 10_000, signal: controller.signal });
    controller.abort(new Error('cancelled'));
    await assert.rejects(waiting, /cancelled/);
    assert.equal(partitions.waiting, 0);
  });
});
