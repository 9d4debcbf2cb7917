import { describe } from 'node:test';
import { DEFAULT_BUFFER_SIZE_BYTES, DEFAULT_MAX_RECORD_BYTES } from '../record-framing.js';
import { attemptCases } from './attempt-cases.js';
import type { ConformanceHarness, ConformanceOptions } from './harness.js';
import { dataCases } from './data-cases.js';
import { inputCases } from './input-cases.js';
import { lifecycleCases } from './lifecycle-cases.js';
import type { SuiteContext } from './suite-context.js';
import { visibilityCases } from './visibility-cases.js';
import { wireHarness } from './wire-harness.js';

/**
 * Registers the shuffle conformance suite with node:test. Call it at the top level of a test file:
 *
 * ```ts
 * describeShuffleConformance({ name: 'my shuffle', partitionTypes: ['BLOCKING'], createHarness });
 * ```
 *
 * Each test gets a fresh harness and closes it. The data and lifecycle tests run once per partition
 * type; what differs between pipelined and blocking types (concurrent consumption, release after one
 * read vs re-reads until release, what a consumer sees before `finish()` and after a failure) is checked
 * accordingly. Every descriptor crosses JSON (`JSON.parse(JSON.stringify(d))`) on its way to an
 * environment, as it does between processes.
 */
export function describeShuffleConformance(options: ConformanceOptions): void {
  const resolved: Required<ConformanceOptions> = {
    timeoutMs: 120_000,
    largeRecordBytes: 10 * 1024 * 1024,
    backpressureBytes: 24 * 1024 * 1024,
    maxRecordBytes: DEFAULT_MAX_RECORD_BYTES,
    ...options,
  };
  if (resolved.largeRecordBytes < DEFAULT_BUFFER_SIZE_BYTES * 2) throw new Error('largeRecordBytes must span several buffers');
  if (resolved.maxRecordBytes < resolved.largeRecordBytes) throw new Error('maxRecordBytes must admit the largeRecordBytes test');
  const ctx: SuiteContext = {
    options: resolved,
    async withHarness(body: (h: ConformanceHarness) => Promise<void>): Promise<void> {
      const harness = wireHarness(await resolved.createHarness());
      try {
        await body(harness);
      } finally {
        await harness.close();
      }
    },
  };
  describe(`shuffle conformance: ${resolved.name}`, () => {
    for (const type of resolved.partitionTypes) {
      describe(type, () => {
        dataCases(ctx, type);
        lifecycleCases(ctx, type);
        visibilityCases(ctx, type);
        inputCases(ctx, type);
        attemptCases(ctx, type);
      });
    }
  });
}
