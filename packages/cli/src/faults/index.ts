// @weft/cli/faults: the seeded fault-injection harness behind `weft run --inject-faults`, for tests.
export { createFaultHarness, type CreateFaultHarnessRequest } from './create-fault-harness.js';
export { damageablePartitions, type DamagePartitionRequest, type FaultActions, FaultHarness, type PlannedFault } from './fault-harness.js';
export { FAULT_KINDS, FAULT_SPEC_GRAMMAR, type FaultKind, type FaultRequest, type FaultSpec, formatFaultSpec, parseFaultSpec } from './fault-spec.js';
export { restartRedis } from './redis-restart.js';
export { remotePartitionDamage } from './remote-fault-actions.js';
export { SeededRandom } from './seeded-random.js';
