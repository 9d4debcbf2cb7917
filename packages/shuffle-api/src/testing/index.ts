export { describeShuffleConformance } from './conformance-suite.js';
export type { ConformanceHarness, ConformanceOptions } from './harness.js';
export * from './exchange-helpers.js';
