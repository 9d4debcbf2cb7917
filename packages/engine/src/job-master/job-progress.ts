import type { SkewedSplitRecord, VertexInputRanges } from './job-events.js';

/** A snapshot of a running job, for progress displays. */
export interface JobProgress {
  readonly elapsedMs: number;
  readonly tasksFinished: number;
  readonly tasksTotal: number;
  readonly tasksRunning: number;
  readonly regionsFinished: number;
  readonly regionsTotal: number;
  /** Records read by sources so far. */
  readonly recordsRead: number;
  /** Records and framed bytes written to exchanges (all edges) so far. */
  readonly recordsShuffled: number;
  readonly bytesShuffled: number;
  /** Task attempts that failed so far (restarts follow when a restart strategy allows). */
  readonly failures: number;
  /** Per job vertex, in topology order: records its subtasks read and wrote to exchanges (finished and running attempts). */
  readonly vertices?: readonly VertexProgress[];
}

/** One job vertex's live counters (JobProgress.vertices). */
export interface VertexProgress {
  readonly id: string;
  readonly recordsIn: number;
  readonly recordsOut: number;
}

/** Per-edge totals of a job (finished attempts only, once the job ends). */
export interface EdgeSummary {
  readonly id: string;
  readonly source: string;
  readonly target: string;
  readonly distribution: string;
  readonly partitionType: string;
  readonly records: number;
  readonly bytes: number;
}

export interface VertexSummary {
  readonly id: string;
  /** The chained operators' names. */
  readonly name: string;
  /** Planned, or — an adaptive run's vertex decided at run time — decided (`decided` set). */
  readonly parallelism: number;
  /**
   * Set on a vertex of an adaptive run whose parallelism was decided while the job ran: the framed bytes
   * its inputs held, and per input edge what each subtask read (inclusive partition and subpartition
   * ranges), as logged in its `vertex-initialized` event. Absent: fixed (or never decided: the job failed first).
   */
  readonly decided?: { readonly bytesIn: number; readonly inputs: readonly VertexInputRanges[]; readonly skewedSplits?: readonly SkewedSplitRecord[] };
  /** Records the vertex read (from its sources or its input edges). */
  readonly recordsIn: number;
  /** Records its window operator dropped as late (their every window had fired), over its finished attempts; absent: none. */
  readonly lateRecordsDropped?: number;
  /** Fused operator pairs of its chain (PlannedVertex.fusions), e.g. `"read-lines => split-words (text-chunks)"`. */
  readonly fusions: readonly string[];
}
