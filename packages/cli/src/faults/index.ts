// @weft/cli/faults: the seeded fault-injection harness behind `weft run --inject-faults`, for tests.
export { createFaultHarness, type CreateFaultHarnessRequest } from './create-fault-harness.js';
export { damageablePartitions, type DamagePartitionRequest, type FaultActions, FaultHarness, type PlannedFault, type ServerProcessRef, type ShuffleServerFaultActions } from './fault-harness.js';
export { DEFAULT_PAUSE_MS, FAULT_KINDS, FAULT_SPEC_GRAMMAR, type FaultKind, type FaultRequest, type FaultSpec, formatFaultSpec, parseFaultSpec, SERVER_FAULT_KINDS, SERVER_FAULT_POINTS, type ServerFaultKind, type ServerFaultPoint } from './fault-spec.js';
export { restartRedis } from './redis-restart.js';
export { remotePartitionDamage, type ShuffleServerPoolRef, shuffleServerFaultActions } from './remote-fault-actions.js';
export { SeededRandom } from './seeded-random.js';
