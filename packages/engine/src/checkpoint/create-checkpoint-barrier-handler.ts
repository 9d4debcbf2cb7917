import { performance } from 'node:perf_hooks';
import { invalidEngineArgument } from '../errors/engine-error.js';
import { AlignedBarrierHandler } from './aligned-barrier-handler.js';
import type { CheckpointBarrierHandler, CheckpointBarrierHandlerOptions } from './checkpoint-barrier-handler.js';
import { CheckpointBarrierTracker } from './checkpoint-barrier-tracker.js';

const OPTION_KEYS = new Set(['mode', 'channels', 'clock', 'onTrigger', 'onAbort']);
/** More input channels than any task has; a bigger number is a mistake, not a topology. */
const MAX_CHANNELS = 1 << 20;

/**
 * A barrier handler for a task with `options.channels` input channels (DESIGN.md contract 6):
 * `aligned` (Flink's SingleCheckpointBarrierHandler, exactly-once) or `at-least-once` (Flink's
 * CheckpointBarrierTracker). Options are checked once: `WEFT_ERR_INVALID_ARGUMENT` naming the option;
 * unknown keys are refused. Events are checked as they come (a channel out of range, ended or blocked, a
 * checkpoint id below 1): the same error, naming `channel` or `checkpointId`.
 */
export function createCheckpointBarrierHandler(options: CheckpointBarrierHandlerOptions): CheckpointBarrierHandler {
  if (typeof options !== 'object' || options === null) throw invalidEngineArgument('options', 'expected an object');
  for (const key of Object.keys(options)) if (!OPTION_KEYS.has(key)) throw invalidEngineArgument(`options.${key}`, `unknown option (known: ${[...OPTION_KEYS].join(', ')})`);
  const { mode, channels, clock, onTrigger, onAbort } = options;
  if (!Number.isInteger(channels) || channels < 1 || channels > MAX_CHANNELS) throw invalidEngineArgument('options.channels', `an integer from 1 to ${MAX_CHANNELS}, got ${String(channels)}`);
  if (typeof onTrigger !== 'function') throw invalidEngineArgument('options.onTrigger', 'expected a function');
  if (typeof onAbort !== 'function') throw invalidEngineArgument('options.onAbort', 'expected a function');
  if (clock !== undefined && typeof clock !== 'function') throw invalidEngineArgument('options.clock', 'expected a function returning milliseconds');
  const now = clock ?? (() => performance.now());
  if (mode === 'aligned') return new AlignedBarrierHandler(channels, now, onTrigger, onAbort);
  if (mode === 'at-least-once') return new CheckpointBarrierTracker(channels, now, onTrigger, onAbort);
  throw invalidEngineArgument('options.mode', `'aligned' or 'at-least-once', got ${JSON.stringify(mode)}`);
}
