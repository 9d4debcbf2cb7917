// ProducerDescriptor.location (where the producer's executor serves partitions): optional, and checked
// when present, naming the bad field.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { isShuffleError, validateProducerDescriptor, validateShuffleLocation } from '@weft/shuffle-api';

const producer = { producerId: 'map#0@0', attempt: 0, taskExecutorId: 'worker-0' };

function fieldOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_ARGUMENT'), String(error));
    return (error as { context?: { field?: unknown } }).context?.field;
  }
  return undefined;
}

describe('ProducerDescriptor.location', () => {
  it('is optional, and kept as given when valid', () => {
    assert.deepEqual(validateProducerDescriptor(producer), producer);
    const located = { ...producer, location: { host: '10.0.0.5', port: 7001 } };
    assert.deepEqual(validateProducerDescriptor(located), located);
  });

  it('is refused naming the field when its host or port is wrong', () => {
    assert.equal(fieldOf(() => validateProducerDescriptor({ ...producer, location: { host: '', port: 7001 } })), 'producer.location.host');
    assert.equal(fieldOf(() => validateProducerDescriptor({ ...producer, location: { host: 'h', port: 70_000 } })), 'producer.location.port');
    assert.equal(fieldOf(() => validateProducerDescriptor({ ...producer, location: 'h:1' })), 'producer.location');
    assert.equal(fieldOf(() => validateShuffleLocation({ host: 'h', port: 0 })), 'location.port');
  });
});
