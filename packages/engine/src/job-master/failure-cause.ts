import { findShuffleError } from '@weft/shuffle-api';
import type { ExecutionTopology } from '../execution/execution-topology.js';

/** The error's code and message, for reports. */
export function describeFailure(error: Error): { code?: string; message: string } {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? { code, message: error.message } : { message: error.message };
}

const UNREADABLE_CODES = ['SHF_ERR_PARTITION_NOT_FOUND', 'SHF_ERR_DATA_CORRUPTED'] as const;

/**
 * The result partitions a task failure names as unreadable: a SHF_ERR_PARTITION_NOT_FOUND (its object is
 * gone) or SHF_ERR_DATA_CORRUPTED (a checksum failed) anywhere in the cause chain, whose `partitionId`
 * context is a partition of this job. Their producers must run again (docs/DESIGN.md: a persisted partition is
 * available unless named in the failure cause).
 */
export function lostPartitionsOf(error: unknown, topology: ExecutionTopology): string[] {
  const lost: string[] = [];
  for (const code of UNREADABLE_CODES) {
    const found = findShuffleError(error, code);
    const id = found?.context['partitionId'];
    if (typeof id === 'string' && topology.indexOfResultPartition(id) >= 0 && !lost.includes(id)) lost.push(id);
  }
  return lost;
}
