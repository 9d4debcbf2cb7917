import { invalidJob, type LogicalGraph, type OperatorSpec } from '../api/logical-graph.js';
import type { ExchangeMode } from '../api/exchange-mode.js';

/** Whether a source never ends by itself: `generate` without `count`, `watchDirectory` without an end marker, `readRedisStream` without `endField`. */
export function isUnboundedSource(spec: OperatorSpec): boolean {
  switch (spec.kind) {
    case 'generator-source':
      return spec.count === Number.POSITIVE_INFINITY;
    case 'directory-source':
      return spec.endMarker === undefined;
    case 'stream-source':
      return spec.endField === undefined;
    default:
      return false;
  }
}

/**
 * Refuses a `writeText` sink in a job with an unbounded source (`WEFT_ERR_INVALID_JOB` naming both): its
 * file is published when the whole job succeeds, which an unbounded job never does — it runs until it is
 * cancelled, and a cancelled job publishes nothing — so its output would never appear. Such a job writes
 * through a two-phase-commit sink, committed at every completed checkpoint
 * (`sinkTo(fileCommitSink({ dir }))`).
 */
export function checkUnboundedSinks(graph: LogicalGraph, exchangeMode?: ExchangeMode): void {
  const source = graph.nodes.find((n) => isUnboundedSource(n.spec));
  if (source === undefined) return;
  const sink = graph.nodes.find((n) => n.spec.kind === 'text-sink');
  if (sink === undefined) return;
  throw invalidJob(
    `operator ${JSON.stringify(sink.name)} (text-sink)`,
    `source ${JSON.stringify(source.name)} (${source.spec.kind}) is unbounded, and writeText publishes its file only when the whole job succeeds, which an unbounded job never does (it runs until cancelled); write through ${exchangeMode === 'ALL_EDGES_PIPELINED_APPROXIMATE' ? "sinkTo(fileCommitSink({ dir }), { deliveryGuarantee: 'none' }) (approximate recovery refuses an exactly-once sink)" : 'sinkTo(fileCommitSink({ dir }))'}, committed at every completed checkpoint, or bound the source`,
  );
}

/**
 * Refuses a two-phase-commit sink (`sinkTo`) in a job with an unbounded source that takes no checkpoints
 * (`WEFT_ERR_INVALID_JOB` naming both): the sink commits at every completed checkpoint and once when the
 * whole job succeeded — without checkpoints, in a job that never ends, it would commit nothing, and a
 * cancel aborts what it staged.
 */
export function checkUnboundedCommits(graph: LogicalGraph, checkpointed: boolean): void {
  if (checkpointed) return;
  const source = graph.nodes.find((n) => isUnboundedSource(n.spec));
  if (source === undefined) return;
  const sink = graph.nodes.find((n) => n.spec.kind === 'two-phase-commit-sink');
  if (sink === undefined) return;
  throw invalidJob(
    `operator ${JSON.stringify(sink.name)} (two-phase-commit-sink)`,
    `source ${JSON.stringify(source.name)} (${source.spec.kind}) is unbounded, and sinkTo commits at each completed checkpoint and when the whole job succeeds, which an unbounded job never does: without checkpoints nothing would ever be committed; take checkpoints (RunJobOptions checkpointing, weft run --checkpoint-interval) or bound the source`,
  );
}
