import type { LogicalNode } from '../api/logical-graph.js';
import { VALUE_KEY } from '../api/split-words.js';
import type { ChainFusion } from './job-plan.js';

/**
 * The fusion of `node` with `next`, its only chained successor (and `node` feeds nothing else), or
 * undefined: a text source before the word splitter (`text-chunks`); the word splitter before the
 * combiner of a count keyed by the value itself, `keyBy().count()` (`word-count`).
 */
export function chainFusion(node: LogicalNode, next: LogicalNode): ChainFusion | undefined {
  if (node.spec.kind === 'text-source' && next.spec.kind === 'split-words') return 'text-chunks';
  if (node.spec.kind === 'split-words' && next.spec.kind === 'combine' && next.spec.aggregator.kind === 'count' && next.spec.key === VALUE_KEY) return 'word-count';
  return undefined;
}
