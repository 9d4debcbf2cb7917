import type { LogicalNode } from '../api/logical-graph.js';
import { VALUE_KEY } from '../api/split-words.js';
import type { ChainFusion } from '../graph/job-plan.js';
import { AggregateOperator } from './aggregate-operator.js';
import { ArraySource } from './array-source.js';
import { CollectSinkOperator } from './collect-sink-operator.js';
import { CombineOperator } from './combine-operator.js';
import { DirectorySource } from './directory-source.js';
import { FilterOperator } from './filter-operator.js';
import { FlatMapOperator } from './flat-map-operator.js';
import { GeneratorSource } from './generator-source.js';
import { KeyedStateAggregateOperator } from './keyed-state-aggregate-operator.js';
import { JoinOperator } from './join-operator.js';
import { LocalSortOperator } from './local-sort-operator.js';
import { MapOperator } from './map-operator.js';
import { RangeAssignOperator } from './range-assign-operator.js';
import { RangeSource } from './range-source.js';
import { SortBoundariesOperator } from './sort-boundaries-operator.js';
import { SortSampleOperator } from './sort-sample-operator.js';
import { SplitWordsOperator } from './split-words-operator.js';
import { StreamSource } from './stream-source.js';
import type { OperatorContext, Output, SourceOperator, StreamOperator } from './stream-operator.js';
import { TextFileSource } from './text-file-source.js';
import { TextSinkOperator } from './text-sink-operator.js';
import { TwoPhaseCommitSinkOperator } from './two-phase-commit-sink-operator.js';
import { TimestampsWatermarksOperator } from './timestamps-watermarks-operator.js';
import { WindowAggregateOperator } from './window-aggregate-operator.js';
import { WordCountCombiner } from './word-count-combiner.js';

export type RuntimeOperator = { readonly source: true; readonly operator: SourceOperator } | { readonly source: false; readonly operator: StreamOperator };

/**
 * Instantiates the runtime operator of a logical node, emitting to `output`; `fusion` is the plan's
 * fusion of this operator with its only chained successor (`output`), if any.
 */
export function createOperator(node: LogicalNode, output: Output, context: OperatorContext, fusion?: ChainFusion): RuntimeOperator {
  const spec = node.spec;
  switch (spec.kind) {
    case 'text-source':
      return { source: true, operator: new TextFileSource(spec.path, output, context, fusion === 'text-chunks') };
    case 'split-words':
      return { source: false, operator: new SplitWordsOperator(output, context, fusion === 'word-count') };
    case 'range-source':
      return { source: true, operator: new RangeSource(spec.start, spec.end, output, context) };
    case 'generator-source':
      return { source: true, operator: new GeneratorSource(spec, output, context) };
    case 'directory-source':
      return { source: true, operator: new DirectorySource(spec, output, context) };
    case 'stream-source':
      return { source: true, operator: new StreamSource(spec, output, context) };
    case 'array-source':
      return { source: true, operator: new ArraySource(spec.values, output, context) };
    case 'map':
      return { source: false, operator: new MapOperator(spec.fn, output, context) };
    case 'flat-map':
      return { source: false, operator: new FlatMapOperator(spec.fn, output, context) };
    case 'filter':
      return { source: false, operator: new FilterOperator(spec.fn, output, context) };
    case 'combine':
      if (spec.aggregator.kind === 'count' && spec.key === VALUE_KEY) return { source: false, operator: new WordCountCombiner(spec.key, spec.aggregator, spec.maxKeys, output, context) };
      return { source: false, operator: new CombineOperator(spec.key, spec.aggregator, spec.maxKeys, output, context) };
    case 'aggregate':
      if (context.state !== undefined) return { source: false, operator: new KeyedStateAggregateOperator(spec.aggregator, spec.key, output, context) };
      return { source: false, operator: new AggregateOperator(spec.aggregator, spec.key, output, context) };
    case 'timestamps-watermarks':
      return { source: false, operator: new TimestampsWatermarksOperator(spec, output, context) };
    case 'window-aggregate':
      return { source: false, operator: new WindowAggregateOperator(spec, output, context) };
    case 'join':
      return { source: false, operator: new JoinOperator(spec, output, context) };
    case 'sort-sample':
      return { source: false, operator: new SortSampleOperator(spec.key, spec.samples, output, context) };
    case 'sort-boundaries':
      return { source: false, operator: new SortBoundariesOperator(spec.descending, output) };
    case 'range-assign':
      return { source: false, operator: new RangeAssignOperator(spec.key, spec.descending, output, context) };
    case 'local-sort':
      return { source: false, operator: new LocalSortOperator(spec.key, spec.descending, output, context) };
    case 'text-sink':
      return { source: false, operator: new TextSinkOperator(spec.path, spec.format, context) };
    case 'collect-sink':
      return { source: false, operator: new CollectSinkOperator(spec.name, context) };
    case 'two-phase-commit-sink':
      return { source: false, operator: new TwoPhaseCommitSinkOperator(spec.create, node.uid, context) };
  }
}
