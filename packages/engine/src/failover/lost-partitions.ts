import type { ExecutionTopology } from '../execution/execution-topology.js';

/** Resolves lost partition ids to indexes; throws `WEFT_ERR_UNKNOWN_PARTITION` naming `lostPartitions[i]`. */
export function requireLostPartitions(topology: ExecutionTopology, lost: Iterable<string> | undefined): number[] {
  if (lost === undefined) return [];
  const out: number[] = [];
  let i = 0;
  for (const id of lost) out.push(topology.requireResultPartition(id, `lostPartitions[${i++}]`));
  return out;
}
