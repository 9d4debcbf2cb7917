import type { CreateInputGateRequest, CreateWriterRequest, ShuffleEnvironment } from '../shuffle-environment.js';
import type { ShuffleMaster } from '../shuffle-master.js';
import type { ConformanceHarness } from './harness.js';

/**
 * What a value looks like after crossing a process boundary as JSON. `undefined` (no value) stays
 * `undefined`; a value JSON cannot encode at all (a cycle, a BigInt) is passed on unchanged so that the
 * implementation's own validation answers it.
 */
export function throughJson<T>(value: T): T {
  if (value === undefined) return value;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return value;
  }
  return (text === undefined ? undefined : JSON.parse(text)) as T;
}

/** Calls `target[name]` with `target` as `this`, whatever the method relies on (private fields too). */
function bound(target: object, name: PropertyKey): unknown {
  const value: unknown = Reflect.get(target, name, target);
  return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
}

function wireEnvironment(environment: ShuffleEnvironment): ShuffleEnvironment {
  return new Proxy(environment, {
    get(target, name) {
      if (name === 'createResultPartitionWriter') {
        return (request: CreateWriterRequest) =>
          target.createResultPartitionWriter(
            typeof request === 'object' && request !== null ? { ...request, descriptor: throughJson(request.descriptor) } : request,
          );
      }
      if (name === 'createInputGate') {
        return (request: CreateInputGateRequest) =>
          target.createInputGate(
            typeof request === 'object' && request !== null && Array.isArray(request.inputs)
              ? { ...request, inputs: request.inputs.map((d) => throughJson(d)) }
              : request,
          );
      }
      return bound(target, name);
    },
  });
}

function wireMaster(master: ShuffleMaster): ShuffleMaster {
  return new Proxy(master, {
    get(target, name) {
      if (name === 'releasePartitionExternally') {
        return (descriptor: Parameters<ShuffleMaster['releasePartitionExternally']>[0]) => target.releasePartitionExternally(throughJson(descriptor));
      }
      return bound(target, name);
    },
  });
}

/**
 * The harness as the suite uses it: descriptors are plain JSON that the engine ships to other processes,
 * so every descriptor passes through `JSON.parse(JSON.stringify(d))` before it reaches an environment
 * (writers and gates) or the master's release. An implementation that keeps class instances or
 * functions in a descriptor, or that recognises descriptors by identity, fails.
 */
export function wireHarness(harness: ConformanceHarness): ConformanceHarness {
  const producerEnvironment = wireEnvironment(harness.producerEnvironment);
  const consumerEnvironment =
    harness.consumerEnvironment === harness.producerEnvironment ? producerEnvironment : wireEnvironment(harness.consumerEnvironment);
  return {
    master: wireMaster(harness.master),
    producerEnvironment,
    consumerEnvironment,
    ...(harness.createMaster === undefined ? {} : { createMaster: async () => wireMaster(await harness.createMaster!()) }),
    close: () => harness.close(),
  };
}
