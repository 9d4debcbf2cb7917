// TaskGates, the input gates of one task attempt: a gate's share of the budget is reserved while it is
// read and released after; the task's end closes the open gates without waiting for one still opening
// (an approximate input's gate can wait for its producer's registration until a reconnect timeout), which
// is closed when it opens — so a task that fails is reported at once. A failed close does not keep the
// others open.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InputGate } from '@weft/shuffle-api';
import { MemoryManager } from '@weft/engine';
import { TaskGates } from '../src/runtime/task-gates.js';
import type { InputDeployment } from '../src/runtime/task-deployment.js';

const input = (partitions = 1): InputDeployment => ({ inputIndex: 0, pipelined: true, partitions: Array.from({ length: partitions }, () => ({})) }) as unknown as InputDeployment;

function fakeGate(log: string[], name: string, closeFails = false): InputGate {
  return {
    close: async () => {
      log.push(`close ${name}`);
      if (closeFails) throw new Error(`${name} would not close`);
    },
  } as unknown as InputGate;
}

function setup(open: (input: InputDeployment) => Promise<InputGate>) {
  const manager = new MemoryManager(64 * 1024 * 1024);
  const memory = manager.consumer('shuffle buffers');
  const gates = new TaskGates({ memory, createGate: (i) => open(i), resumeFrom: () => undefined });
  return { manager, gates };
}

describe('TaskGates', () => {
  it("reads through an open gate, its share reserved while it is read, and closes it after", async () => {
    const log: string[] = [];
    const { manager, gates } = setup(async () => fakeGate(log, 'g'));
    await gates.read(input(), async () => {
      assert.ok(manager.reservedBytes > 0, 'reserved while read');
      log.push('consume');
    });
    assert.deepEqual(log, ['consume', 'close g']);
    assert.equal(manager.reservedBytes, 0);
    await gates.close();
    assert.deepEqual(log, ['consume', 'close g'], 'closed once');
  });

  it('closes the open gates at the end without waiting for one still opening; that one is closed when it opens', async () => {
    const log: string[] = [];
    let finishOpening: (() => void) | undefined;
    let releaseRead: (() => void) | undefined;
    const { manager, gates } = setup(async (i) => {
      const late = (i as unknown as { late?: boolean }).late === true;
      if (late) await new Promise<void>((resolve) => (finishOpening = resolve));
      return fakeGate(log, late ? 'late' : 'open');
    });
    const reading = gates.read(input(), () => new Promise<void>((resolve) => (releaseRead = resolve)));
    const waiting = gates.read(Object.assign(input(), { late: true }), async () => assert.fail('read after the end'));
    await new Promise((resolve) => setImmediate(resolve));
    await gates.close(); // resolves although the late gate is still opening
    assert.deepEqual(log, ['close open']);
    finishOpening?.();
    await assert.rejects(waiting, /opened after its task ended/);
    assert.deepEqual(log, ['close open', 'close late']);
    releaseRead?.();
    await reading;
    assert.equal(manager.reservedBytes, 0);
  });

  it('a gate that fails to close does not keep the others open; close reports it', async () => {
    const log: string[] = [];
    const { gates } = setup(async (i) => fakeGate(log, (i as unknown as { name: string }).name, (i as unknown as { name: string }).name === 'a'));
    const never = new Promise<void>(() => {});
    void gates.read(Object.assign(input(), { name: 'a' }), () => never);
    void gates.read(Object.assign(input(), { name: 'b' }), () => never);
    await new Promise((resolve) => setImmediate(resolve));
    await assert.rejects(gates.close(), /a would not close/);
    assert.deepEqual(log.sort(), ['close a', 'close b']);
  });

  it('opens nothing for an input without partitions (an approximate input whose producers all finished)', async () => {
    let opened = 0;
    const { manager, gates } = setup(async () => {
      opened++;
      return fakeGate([], 'g');
    });
    await gates.read(input(0), async () => assert.fail('nothing to consume'));
    assert.equal(opened, 0);
    assert.equal(manager.reservedBytes, 0);
  });
});
