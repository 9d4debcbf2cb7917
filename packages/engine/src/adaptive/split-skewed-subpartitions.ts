import type { ConsumedInputInfo, IndexRange, ParallelismAndInputInfos, SubtaskInputInfo } from './parallelism-and-input-infos.js';

/** What `splitSkewedSubpartitions` splits, and by which rule. Plain data. */
export interface SkewSplitRequest {
  /** The consumed inputs the decision was made from (`decideParallelismAndInputInfos`' request inputs). */
  readonly inputs: readonly ConsumedInputInfo[];
  /** The decision to refine: every non-broadcast input reads all its partitions of the same subpartition range. */
  readonly decision: ParallelismAndInputInfos;
  /**
   * Per input: true when its records may be split by producer ranges (a join's probe side: each record is
   * joined on its own); false when every subtask reading a subpartition must see all of it (a join's build
   * side, replicated to each part). At least one splittable, non-broadcast ALL_TO_ALL input, else no split.
   */
  readonly splittable: readonly boolean[];
  /** A subpartition is skewed when its bytes (over the splittable inputs) exceed `skewedFactor` × the median's … (>= 1). */
  readonly skewedFactor: number;
  /** … and exceed `skewedThresholdBytes`. */
  readonly skewedThresholdBytes: number;
  /** The least bytes a part is sized to (the decider's `dataVolumePerTaskBytes`). */
  readonly dataVolumePerTaskBytes: number;
  /** The most subtasks the vertex may have after splitting; splits that do not fit are dropped, smallest first. */
  readonly maxParallelism: number;
}

/** One skewed subpartition that was split: into `parts` subtasks, part i reading `partitions[i]` of the splittable inputs. */
export interface SkewedSubpartitionSplit {
  readonly subpartition: number;
  /** Its bytes over the splittable inputs (what made it skewed). */
  readonly bytes: number;
  readonly parts: number;
  /** The producer ranges of the parts, in order (inclusive). */
  readonly partitions: readonly IndexRange[];
}

/** The refined decision, and what was split (empty: `decision` unchanged). */
export interface SkewSplitResult extends ParallelismAndInputInfos {
  readonly splits: readonly SkewedSubpartitionSplit[];
}

/** Flink's `median` of `VertexParallelismAndInputInfosDeciderUtils`: of the sorted values, at least 1. */
export function medianBytes(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return 1;
  const m = n % 2 === 0 ? Math.floor(((sorted[n / 2] as number) + (sorted[n / 2 - 1] as number)) / 2) : (sorted[(n - 1) / 2] as number);
  return Math.max(m, 1);
}

/**
 * Flink 2.x's skewed-join optimisation (`AdaptiveSkewedJoinOptimizationStrategy` with
 * `AllToAllVertexInputInfoComputer`), on a decision already made: a subpartition of the splittable inputs is
 * skewed when its bytes exceed `max(median × skewedFactor, skewedThresholdBytes)` (Flink's
 * `computeSkewThreshold`); it is split by producer ranges of at most the target size each — `max(volume
 * per task, mean of the non-skewed subpartitions)` (Flink's `computeTargetSize`), filled greedily in
 * producer order — into parts, each a subtask of its own that reads its producer range of the splittable
 * inputs and the whole subpartition of the others (replicated). The subtask whose range held a skewed
 * subpartition is cut around it, so every subtask still reads one rectangle (a partition range × a
 * subpartition range) per input — where Flink lets one subtask read several slices, we give each slice
 * group a subtask. Only one side is split (no cartesian product of two split sides).
 */
export function splitSkewedSubpartitions(request: SkewSplitRequest): SkewSplitResult {
  const { inputs, decision } = request;
  const unchanged: SkewSplitResult = { ...decision, splits: [] };
  const split = inputs.map((input, i) => request.splittable[i] === true && input.broadcast !== true && input.distribution === 'ALL_TO_ALL');
  const reference = inputs.findIndex((input) => input.broadcast !== true);
  if (!split.some(Boolean) || reference < 0) return unchanged;
  // every non-broadcast input must be ALL_TO_ALL and read all its partitions (the decider's all-to-all answer)
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i] as ConsumedInputInfo;
    if (input.broadcast === true) continue;
    if (input.distribution !== 'ALL_TO_ALL') return unchanged;
    const subtasks = decision.inputs[i]?.subtasks ?? [];
    if (subtasks.some((s) => s.partitions.start !== 0 || s.partitions.end !== input.bytes.length - 1)) return unchanged;
  }
  const splitInputs = inputs.filter((_, i) => split[i]);
  const partitionCount = splitInputs[0]?.bytes.length ?? 0;
  if (splitInputs.some((input) => input.bytes.length !== partitionCount)) return unchanged; // Flink's hasSameNumPartitions
  const subpartitionCount = splitInputs[0]?.bytes[0]?.length ?? 0;
  // bytes[p][s] over the splittable inputs
  const byPartition: number[][] = Array.from({ length: partitionCount }, (_, p) => Array.from({ length: subpartitionCount }, (_, s) => splitInputs.reduce((sum, input) => sum + (input.bytes[p]?.[s] ?? 0), 0)));
  const aggregated = Array.from({ length: subpartitionCount }, (_, s) => byPartition.reduce((sum, row) => sum + (row[s] as number), 0));
  const threshold = Math.max(Math.floor(medianBytes(aggregated) * request.skewedFactor), request.skewedThresholdBytes);
  const normal = aggregated.filter((b) => b <= threshold);
  const target = normal.length === 0 ? request.dataVolumePerTaskBytes : Math.max(request.dataVolumePerTaskBytes, Math.floor(normal.reduce((a, b) => a + b, 0) / normal.length));

  let splits: SkewedSubpartitionSplit[] = [];
  for (let s = 0; s < subpartitionCount; s++) {
    if ((aggregated[s] as number) <= threshold) continue;
    const ranges = partitionRangesOfAtMost(byPartition.map((row) => row[s] as number), target);
    if (ranges.length > 1) splits.push({ subpartition: s, bytes: aggregated[s] as number, parts: ranges.length, partitions: ranges });
  }
  let result = assemble(request, reference, split, splits);
  while (result.length > request.maxParallelism && splits.length > 0) {
    // the smallest split goes first (ties: the last subpartition)
    let drop = 0;
    splits.forEach((x, i) => {
      if (x.bytes <= (splits[drop] as SkewedSubpartitionSplit).bytes) drop = i;
    });
    splits = splits.filter((_, i) => i !== drop);
    result = assemble(request, reference, split, splits);
  }
  if (splits.length === 0) return unchanged;
  return { parallelism: result.length, inputs: inputs.map((_, i) => ({ subtasks: result.map((row) => row[i] as SubtaskInputInfo) })), splits };
}

/** Producer ranges of `bytes` (one subpartition's bytes per producer), greedy, each at most `limit` unless one producer alone is larger. */
function partitionRangesOfAtMost(bytes: readonly number[], limit: number): IndexRange[] {
  const ranges: IndexRange[] = [];
  let start = 0;
  let size = 0;
  for (let p = 0; p < bytes.length; p++) {
    const b = bytes[p] as number;
    if (p > start && size + b > limit) {
      ranges.push({ start, end: p - 1 });
      start = p;
      size = 0;
    }
    size += b;
  }
  if (bytes.length > 0) ranges.push({ start, end: bytes.length - 1 });
  return ranges;
}

/** Subtask rows (one SubtaskInputInfo per input) after cutting each decided range around its split subpartitions. */
function assemble(request: SkewSplitRequest, reference: number, split: readonly boolean[], splits: readonly SkewedSubpartitionSplit[]): SubtaskInputInfo[][] {
  const bySubpartition = new Map(splits.map((x) => [x.subpartition, x]));
  const rows: SubtaskInputInfo[][] = [];
  const base = request.decision.inputs;
  const subtaskCount = base[reference]?.subtasks.length ?? 0;
  for (let t = 0; t < subtaskCount; t++) {
    const range = (base[reference]?.subtasks[t] as SubtaskInputInfo).subpartitions;
    const row = (subpartitions: IndexRange, splitPartitions?: IndexRange): SubtaskInputInfo[] =>
      request.inputs.map((input, i) => {
        const decided = base[i]?.subtasks[t] as SubtaskInputInfo;
        if (input.broadcast === true) return { partitions: { ...decided.partitions }, subpartitions: { ...decided.subpartitions } };
        return { partitions: splitPartitions !== undefined && split[i] === true ? { ...splitPartitions } : { ...decided.partitions }, subpartitions: { ...subpartitions } };
      });
    let from = range.start;
    for (let s = range.start; s <= range.end; s++) {
      const x = bySubpartition.get(s);
      if (x === undefined) continue;
      if (s > from) rows.push(row({ start: from, end: s - 1 }));
      for (const partitions of x.partitions) rows.push(row({ start: s, end: s }, partitions));
      from = s + 1;
    }
    if (from <= range.end) rows.push(row({ start: from, end: range.end }));
  }
  return rows;
}
