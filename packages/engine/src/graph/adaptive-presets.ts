import type { LogicalGraph } from '../api/logical-graph.js';
import { type ResolvedAdaptiveBatchOptions, sourceParallelismForBytes } from '../adaptive/adaptive-batch-options.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import { resolveJobPath } from '../io/job-paths.js';
import { inputUnreadable, listJobInputFiles } from '../operators/text-file-source.js';

/**
 * What an adaptive plan (`--parallelism auto`) fixes before the job runs, and how the plan is sized.
 * Plain JSON: the job master computes it once and workers rebuild the same plan from it.
 */
export interface PlanAdaptivity {
  readonly options: ResolvedAdaptiveBatchOptions;
  /**
   * Parallelism chosen before the job runs, by logical node uid, for sources without an explicit one:
   * text sources (their input's bytes / `dataVolumePerTaskBytes`, within [min, max]) and generated sources
   * (`defaultSourceParallelism`). Everything else is decided at run time — sortBy's sort too: its range
   * assigner splits the keys into as many ranges as it writes subpartitions (maxParallelism), and a
   * decided subtask reads a contiguous run of them, so the ranges stay in key order across subtasks.
   */
  readonly presets: Readonly<Record<string, number>>;
}

/** Computes PlanAdaptivity.presets: lists every text source's input (WEFT_ERR_INPUT_UNREADABLE when it cannot). */
export async function adaptivePresets(graph: LogicalGraph, options: ResolvedAdaptiveBatchOptions, cwd: string, fileSystems: readonly ExternalFileSystem[]): Promise<Record<string, number>> {
  const presets: Record<string, number> = {};
  for (const node of graph.nodes) {
    if (node.parallelism !== undefined) continue;
    const spec = node.spec;
    let p: number | undefined;
    if (spec.kind === 'text-source') {
      const path = resolveJobPath(spec.path, cwd, fileSystems);
      let bytes: number;
      try {
        bytes = (await listJobInputFiles(path)).reduce((sum, f) => sum + f.size, 0);
      } catch (error) {
        throw inputUnreadable(node.name, path.local ?? path.url, error);
      }
      p = sourceParallelismForBytes(bytes, options);
    } else if (spec.kind === 'range-source' || spec.kind === 'array-source' || spec.kind === 'generator-source' || spec.kind === 'directory-source' || spec.kind === 'stream-source') {
      p = Math.min(options.defaultSourceParallelism, options.maxParallelism);
    }
    if (p === undefined) continue;
    presets[node.uid] = p;
  }
  return presets;
}
