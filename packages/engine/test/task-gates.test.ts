// TaskGates, the input gates of one task attempt: a gate opened early (while the operators are built)
// is the one its input's read takes, its share of the budget reserved from the early open until the read
// ends; a gate opened early and never read is closed, its share released, when the task ends — even one
// that finishes opening after that; an early open's failure is the read's, and nobody's when never read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InputGate } from '@weft/shuffle-api';
import { MemoryManager } from '@weft/engine';
import { TaskGates } from '../src/runtime/task-gates.js';
import type { InputDeployment } from '../src/runtime/task-deployment.js';

const input = (partitions = 1): InputDeployment => ({ inputIndex: 0, pipelined: true, partitions: Array.from({ length: partitions }, () => ({})) }) as unknown as InputDeployment;

function fakeGate(log: string[], name: string): InputGate {
  return { close: async () => void log.push(`close ${name}`) } as unknown as InputGate;
}

function setup(open: (input: InputDeployment) => Promise<InputGate>) {
  const manager = new MemoryManager(64 * 1024 * 1024);
  const memory = manager.consumer('shuffle buffers');
  const gates = new TaskGates({ memory, createGate: (i) => open(i), resumeFrom: () => undefined });
  return { manager, gates };
}

describe('TaskGates', () => {
  it('reads the gate opened early: opened once, before the read, its share reserved until the read ends', async () => {
    const log: string[] = [];
    const { manager, gates } = setup(async () => {
      log.push('open');
      return fakeGate(log, 'g');
    });
    const early = input();
    gates.openEarly(early);
    assert.ok(manager.reservedBytes > 0, 'reserved at the early open');
    await new Promise((resolve) => setImmediate(resolve));
    log.push('read');
    await gates.read(early, async () => void log.push('consume'));
    assert.deepEqual(log, ['open', 'read', 'consume', 'close g']);
    assert.equal(manager.reservedBytes, 0);
    await gates.close();
    assert.equal(log.filter((l) => l === 'open').length, 1);
  });

  it('closes a gate opened early and never read, and one that finished opening after the task ended; releases their shares', async () => {
    const log: string[] = [];
    let finishOpening: (() => void) | undefined;
    const { manager, gates } = setup(async (i) => {
      if ((i as unknown as { late?: boolean }).late === true) await new Promise<void>((resolve) => (finishOpening = resolve));
      return fakeGate(log, (i as unknown as { late?: boolean }).late === true ? 'late' : 'unread');
    });
    gates.openEarly(input());
    const late = Object.assign(input(), { late: true });
    gates.openEarly(late);
    await new Promise((resolve) => setImmediate(resolve));
    const closing = gates.close();
    finishOpening?.();
    await closing;
    assert.deepEqual(log.sort(), ['close late', 'close unread']);
    assert.equal(manager.reservedBytes, 0);
  });

  it("an early open's failure is the read's; never read, it fails nobody", async () => {
    const failure = new Error('no such partition');
    const { manager, gates } = setup(() => Promise.reject(failure));
    const read = input();
    gates.openEarly(read);
    gates.openEarly(input());
    await assert.rejects(gates.read(read, async () => assert.fail('nothing to consume')), (error) => error === failure);
    await gates.close();
    assert.equal(manager.reservedBytes, 0);
  });

  it('openEarly resolves once the gate is open, or at the next turn of the event loop when it cannot open at once', async () => {
    const log: string[] = [];
    let release: (() => void) | undefined;
    const { gates } = setup(async (i) => {
      if ((i as unknown as { waits?: boolean }).waits === true) await new Promise<void>((resolve) => (release = resolve));
      else await Promise.resolve();
      log.push('open');
      return fakeGate(log, 'g');
    });
    await gates.openEarly(input());
    assert.deepEqual(log, ['open'], 'open before openEarly resolved');
    const waiting = Object.assign(input(), { waits: true });
    await gates.openEarly(waiting); // does not wait for the producer's registration
    assert.deepEqual(log, ['open']);
    release?.();
    await gates.read(waiting, async () => void log.push('consume'));
    assert.deepEqual(log, ['open', 'open', 'consume', 'close g']);
    await gates.close();
  });

  it('opens nothing for an input without partitions (an approximate input whose producers all finished)', async () => {
    let opened = 0;
    const { manager, gates } = setup(async () => {
      opened++;
      return fakeGate([], 'g');
    });
    const empty = input(0);
    gates.openEarly(empty);
    await gates.read(empty, async () => assert.fail('nothing to consume'));
    assert.equal(opened, 0);
    assert.equal(manager.reservedBytes, 0);
  });
});
