// @weft/engine: planning (topology, execution expansion, pipelined regions, failover, key groups, restart
// strategies). The runtime (job API, scheduler, task executors) is added beside these folders.

export * from './errors/error-codes.js';
export * from './errors/engine-error.js';

export type * from './topology/job-topology.js';
export { defaultEdgeId, MAX_PARALLELISM } from './topology/job-topology.js';
export * from './topology/validate-topology.js';

export * from './execution/execution-topology.js';

export * from './regions/pipelined-regions.js';
export * from './regions/strongly-connected-components.js';
export * from './regions/disjoint-set.js';

export * from './failover/failover-strategy.js';
export * from './failover/create-failover-strategy.js';
export * from './failover/restart-pipelined-region-failover-strategy.js';
export * from './failover/restart-all-failover-strategy.js';
export * from './failover/restart-individual-failover-strategy.js';

export * from './keygroups/java-hash-code.js';
export * from './keygroups/murmur-hash.js';
export * from './keygroups/key-group-range-assignment.js';

export type * from './restart/restart-backoff-time-strategy.js';
export { DEFAULT_RESTART_STRATEGY_OPTIONS } from './restart/restart-backoff-time-strategy.js';
export * from './restart/create-restart-backoff-time-strategy.js';
export * from './restart/fixed-delay-restart-backoff-time-strategy.js';
export * from './restart/failure-rate-restart-backoff-time-strategy.js';
export * from './restart/exponential-delay-restart-backoff-time-strategy.js';
export * from './restart/no-restart-backoff-time-strategy.js';
