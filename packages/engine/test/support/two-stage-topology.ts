import type { JobTopology } from '@weft/engine';

/**
 * `numbers` (2 subtasks) feeds `double` pipelined (same region) and `double` feeds `sum` through a
 * BLOCKING all-to-all edge: regions {numbers#0, double#0}, {numbers#1, double#1}, {sum#0}.
 */
export const TWO_STAGE_TOPOLOGY: JobTopology = {
  vertices: [
    { id: 'numbers', parallelism: 2 },
    { id: 'double', parallelism: 2 },
    { id: 'sum', parallelism: 1 },
  ],
  edges: [
    { id: 'numbers->double', source: 'numbers', target: 'double', distribution: 'POINTWISE', partitionType: 'PIPELINED' },
    { id: 'double->sum', source: 'double', target: 'sum', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' },
  ],
};
