import { strict as assert } from 'node:assert';
import { connect } from 'node:net';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { isShuffleError, taskExecutorId } from '@weft/shuffle-api';
import { readAllFrom } from './helpers/read-all.js';
import { registerPartition, thrownBy, rejectionOf } from '@weft/shuffle-api/testing';
import { DEFAULT_NETWORK_SHUFFLE_OPTIONS, createNetworkShuffleServiceFactory, resolveNetworkShuffleOptions } from '@weft/shuffle-network';

const settingOf = (error: unknown): unknown => (isShuffleError(error, 'SHF_ERR_INVALID_CONFIG') ? error.context['setting'] : `not INVALID_CONFIG: ${String(error)}`);

describe('network shuffle options', () => {
  it("has Flink's credit defaults: 2 exclusive buffers per channel, 8 floating per gate, 32 KiB buffers", () => {
    assert.deepEqual(
      [DEFAULT_NETWORK_SHUFFLE_OPTIONS.buffersPerChannel, DEFAULT_NETWORK_SHUFFLE_OPTIONS.floatingBuffersPerGate, DEFAULT_NETWORK_SHUFFLE_OPTIONS.bufferSizeBytes],
      [2, 8, 32 * 1024],
    );
  });

  it('refuses unknown keys and bad values with SHF_ERR_INVALID_CONFIG naming the option', () => {
    for (const [options, setting] of [
      [{ bufferSize: 1024 }, 'bufferSize'],
      [{ port: 70_000 }, 'port'],
      [{ port: -1 }, 'port'],
      [{ host: '' }, 'host'],
      [{ buffersPerChannel: 0 }, 'buffersPerChannel'],
      [{ floatingBuffersPerGate: 1.5 }, 'floatingBuffersPerGate'],
      [{ taskExecutors: { a: 'no-port' } }, 'taskExecutors.a'],
      [{ requestTimeoutMs: 0 }, 'requestTimeoutMs'],
      [{ reconnectTimeoutMs: 0 }, 'reconnectTimeoutMs'],
      [{ reconnectTimeoutMs: '5s' }, 'reconnectTimeoutMs'],
    ] as const) {
      assert.equal(settingOf(thrownBy(() => resolveNetworkShuffleOptions(options as object))), setting, JSON.stringify(options));
    }
    assert.equal(resolveNetworkShuffleOptions({ port: undefined }).port, 0, 'undefined takes the default');
    assert.equal(DEFAULT_NETWORK_SHUFFLE_OPTIONS.reconnectTimeoutMs, 60_000, "Flink's heartbeat.timeout plus a restart");
  });

  it('refuses to start on a port already taken, naming the port', async () => {
    const first = createNetworkShuffleServiceFactory().createShuffleEnvironment({ taskExecutorId: taskExecutorId('a') });
    await first.start();
    const second = createNetworkShuffleServiceFactory({ port: first.address.port }).createShuffleEnvironment({ taskExecutorId: taskExecutorId('b') });
    try {
      assert.equal(settingOf(await rejectionOf(second.start())), 'port');
    } finally {
      await second.close();
      await first.close();
    }
  });

  it('refuses a partition for a task executor whose address it does not know, naming the field', async () => {
    const master = createNetworkShuffleServiceFactory().createShuffleMaster();
    const error = await rejectionOf(registerPartition(master, { jobId: 'nowhere', resultId: 'n', index: 0, type: 'PIPELINED', subpartitions: 1 }));
    assert.ok(isShuffleError(error, 'SHF_ERR_INVALID_ARGUMENT') && error.context['field'] === 'producer.taskExecutorId', String(error));
    const blocking = await rejectionOf(registerPartition(master, { jobId: 'nowhere', resultId: 'n', index: 1, type: 'BLOCKING', subpartitions: 1 }));
    assert.ok(isShuffleError(blocking, 'SHF_ERR_INVALID_ARGUMENT') && blocking.context['field'] === 'partition.partitionType', String(blocking));
    await master.close();
  });

  it('drops a peer that sends garbage and goes on serving others', async () => {
    const factory = createNetworkShuffleServiceFactory();
    const master = factory.createShuffleMaster();
    const environment = factory.createShuffleEnvironment({ taskExecutorId: taskExecutorId('conformance') });
    await environment.start();
    try {
      const garbage = connect(environment.address);
      await once(garbage, 'connect');
      garbage.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
      await once(garbage, 'close');
      const descriptor = await registerPartition(master, { jobId: 'garbage', resultId: 'g', index: 0, type: 'PIPELINED', subpartitions: 1 });
      assert.equal((await readAllFrom(environment, descriptor, 10)).length, 10);
    } finally {
      await environment.close();
      await master.close();
    }
  });
});
