// Test access to internals the package does not export. Tests of this package may import its own
// source (they are part of it); other packages use the public exports only.
export { resolveS3StoreOptions as resolveS3StoreOptionsForTest } from '../../src/config/store-options.js';
export { writerBudget as writerBudgetForTest } from '../../src/shuffle-core/writer-budget.js';
