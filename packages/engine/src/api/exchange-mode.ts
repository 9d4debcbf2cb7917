import type { ResultPartitionType } from '@weft/shuffle-api';

/**
 * How the exchanges (edges) of a job are executed (Flink's GlobalStreamExchangeMode):
 *
 * - `ALL_EDGES_BLOCKING` (the batch default): every edge is BLOCKING; each producer's region finishes and
 *   persists its output before consumers start. Fewest resources, finest failover.
 * - `FORWARD_EDGES_PIPELINED`: forward edges (POINTWISE, equal parallelism, not chained) are pipelined.
 * - `POINTWISE_EDGES_PIPELINED`: every POINTWISE edge (forward, rescale) is pipelined.
 * - `ALL_EDGES_PIPELINED`: every edge is pipelined: the whole job is one region, run in one executor —
 *   or spread over several when their pipelined shuffle serves partitions across them (`weft run --workers 2+`).
 * - `ALL_EDGES_PIPELINED_APPROXIMATE`: every edge is PIPELINED_APPROXIMATE (Flink FLIP-135, approximate local
 *   recovery): pipelined, but not must-be-pipelined, so every task is its own region. A failed task restarts
 *   alone (with its consumer regions, DESIGN.md); its upstreams drop what was meant for it meanwhile and serve
 *   the new attempt from the next whole record. In process only (`weft run --approximate-recovery`).
 *
 * Pipelined edges are PIPELINED_BOUNDED (credit-based, bounded memory). A per-edge override
 * (`DataSet.exchange(...)`) wins over the mode.
 */
export const ExchangeMode = {
  ALL_EDGES_BLOCKING: 'ALL_EDGES_BLOCKING',
  FORWARD_EDGES_PIPELINED: 'FORWARD_EDGES_PIPELINED',
  POINTWISE_EDGES_PIPELINED: 'POINTWISE_EDGES_PIPELINED',
  ALL_EDGES_PIPELINED: 'ALL_EDGES_PIPELINED',
  ALL_EDGES_PIPELINED_APPROXIMATE: 'ALL_EDGES_PIPELINED_APPROXIMATE',
} as const;

export type ExchangeMode = (typeof ExchangeMode)[keyof typeof ExchangeMode];

export const EXCHANGE_MODES: readonly ExchangeMode[] = Object.values(ExchangeMode);

export const DEFAULT_EXCHANGE_MODE: ExchangeMode = 'ALL_EDGES_BLOCKING';

export function isExchangeMode(value: unknown): value is ExchangeMode {
  return typeof value === 'string' && (EXCHANGE_MODES as readonly string[]).includes(value);
}

/** The partition types a per-edge override may name. */
export const EDGE_EXCHANGES = ['PIPELINED', 'PIPELINED_BOUNDED', 'BLOCKING'] as const satisfies readonly ResultPartitionType[];

export type EdgeExchange = (typeof EDGE_EXCHANGES)[number];

export function isEdgeExchange(value: unknown): value is EdgeExchange {
  return typeof value === 'string' && (EDGE_EXCHANGES as readonly string[]).includes(value);
}

/** The partition type of an edge under `mode`, given its shape. */
export function partitionTypeFor(mode: ExchangeMode, edge: { readonly forward: boolean; readonly pointwise: boolean }): ResultPartitionType {
  switch (mode) {
    case 'ALL_EDGES_BLOCKING':
      return 'BLOCKING';
    case 'FORWARD_EDGES_PIPELINED':
      return edge.forward ? 'PIPELINED_BOUNDED' : 'BLOCKING';
    case 'POINTWISE_EDGES_PIPELINED':
      return edge.pointwise ? 'PIPELINED_BOUNDED' : 'BLOCKING';
    case 'ALL_EDGES_PIPELINED':
      return 'PIPELINED_BOUNDED';
    case 'ALL_EDGES_PIPELINED_APPROXIMATE':
      return 'PIPELINED_APPROXIMATE';
  }
}

/** Whether every edge of `mode` is PIPELINED_APPROXIMATE (approximate local recovery). */
export function isApproximateExchangeMode(mode: ExchangeMode): boolean {
  return mode === 'ALL_EDGES_PIPELINED_APPROXIMATE';
}
