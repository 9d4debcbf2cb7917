import { type AdaptiveBatchOptions, DEFAULT_ADAPTIVE_BATCH_OPTIONS, DEFAULT_SKEWED_JOIN_OPTIONS } from '@weft/engine';
import { integerFlag, usageError } from '../parse-command-args.js';

/** The flags of adaptive parallelism (`weft run --parallelism auto`), for parseCommandArgs. */
export const ADAPTIVE_FLAGS = {
  'min-parallelism': { type: 'string' },
  'max-parallelism': { type: 'string' },
  'data-volume-per-task': { type: 'string' },
  'default-source-parallelism': { type: 'string' },
  'skewed-join': { type: 'string' },
  'skewed-aggregation': { type: 'string' },
  'skewed-factor': { type: 'string' },
  'skewed-threshold': { type: 'string' },
} as const;

export const ADAPTIVE_USAGE = `Adaptive parallelism (Flink's adaptive batch scheduler; docs/adaptive-parallelism.md):
  --parallelism auto        decide the parallelism of every operator without an explicit one (setParallelism
                            / { parallelism }) at run time: a text source from its input size, every other
                            one once its producers finished, from the bytes they wrote per key group
  --min-parallelism N       lower bound of a decided parallelism (default ${DEFAULT_ADAPTIVE_BATCH_OPTIONS.minParallelism})
  --max-parallelism N       upper bound, and the key groups producers write for an undecided consumer (default ${DEFAULT_ADAPTIVE_BATCH_OPTIONS.maxParallelism})
  --data-volume-per-task SIZE
                            bytes a subtask should read: 16mb, 512kb, 1g, 4096 (binary units; default 16mb)
  --default-source-parallelism N
                            parallelism of a generated source (range, fromArray), at most the max (default: the max)
  --skewed-join auto|none   split a skewed key group of a decided join's probe side across several subtasks,
                            its build side replicated to each (Flink 2.x's skewed join; default ${DEFAULT_SKEWED_JOIN_OPTIONS.skewedJoin})
  --skewed-aggregation auto|none
                            auto: plan each keyed aggregation in two stages, so a skewed key group is split
                            across subtasks and merged after (one more small exchange; default ${DEFAULT_SKEWED_JOIN_OPTIONS.skewedAggregation})
  --skewed-factor X         a key group is skewed above X times the median's bytes (a number >= 1; default ${DEFAULT_SKEWED_JOIN_OPTIONS.skewedFactor})
  --skewed-threshold SIZE   ... and above SIZE (default 256mb)`;

const UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3, t: 1024 ** 4, tb: 1024 ** 4, tib: 1024 ** 4 };

/** `16mb` → 16777216 (binary units, case-insensitive, as Flink's MemorySize); `WEFT_ERR_USAGE` naming `flag` when malformed or not positive. */
export function parseByteSize(command: string, flag: string, value: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  const unit = match === null ? undefined : UNITS[(match[2] as string).toLowerCase()];
  if (match === null || unit === undefined) throw usageError(command, `${flag} must be a size such as 16mb, 512kb, 1g or 4096 (bytes), got ${JSON.stringify(value)}`);
  const bytes = Math.floor(Number(match[1]) * unit);
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw usageError(command, `${flag} must be at least 1 byte, got ${JSON.stringify(value)}`);
  return bytes;
}

/**
 * The adaptive options of `weft run`: undefined unless `--parallelism auto`; the other adaptive flags
 * need it. `WEFT_ERR_USAGE` (exit 2) naming the flag for a malformed value or min above max.
 */
export function parseAdaptiveFlags(command: string, values: Record<string, string | boolean | undefined>): AdaptiveBatchOptions | undefined {
  const auto = values['parallelism'] === 'auto';
  const given = Object.keys(ADAPTIVE_FLAGS).filter((k) => values[k] !== undefined);
  if (!auto) {
    if (given.length > 0) throw usageError(command, `--${given[0]} needs --parallelism auto`);
    return undefined;
  }
  const text = (k: keyof typeof ADAPTIVE_FLAGS): string | undefined => values[k] as string | undefined;
  const min = integerFlag(command, '--min-parallelism', text('min-parallelism'), 1);
  const max = integerFlag(command, '--max-parallelism', text('max-parallelism'), 1);
  const source = integerFlag(command, '--default-source-parallelism', text('default-source-parallelism'), 1);
  const volume = text('data-volume-per-task');
  const limit = 32768;
  for (const [flag, n] of [['--min-parallelism', min], ['--max-parallelism', max], ['--default-source-parallelism', source]] as const) {
    if (n !== undefined && n > limit) throw usageError(command, `${flag} must be at most ${limit}, got ${n}`);
  }
  const effectiveMax = max ?? DEFAULT_ADAPTIVE_BATCH_OPTIONS.maxParallelism;
  if (min !== undefined && min > effectiveMax) {
    throw usageError(command, `--min-parallelism ${min} is above --max-parallelism ${effectiveMax}${max === undefined ? ' (its default)' : ''}`);
  }
  const skewedJoin = text('skewed-join');
  if (skewedJoin !== undefined && skewedJoin !== 'auto' && skewedJoin !== 'none') throw usageError(command, `--skewed-join must be auto or none, got ${JSON.stringify(skewedJoin)}`);
  const skewedAggregation = text('skewed-aggregation');
  if (skewedAggregation !== undefined && skewedAggregation !== 'auto' && skewedAggregation !== 'none') throw usageError(command, `--skewed-aggregation must be auto or none, got ${JSON.stringify(skewedAggregation)}`);
  const factorText = text('skewed-factor');
  const factor = factorText === undefined ? undefined : Number(factorText);
  if (factorText !== undefined && (!/^\s*\d+(\.\d+)?\s*$/.test(factorText) || !Number.isFinite(factor) || (factor as number) < 1)) {
    throw usageError(command, `--skewed-factor must be a number >= 1 such as 4 or 2.5, got ${JSON.stringify(factorText)}`);
  }
  const threshold = text('skewed-threshold');
  return {
    ...(skewedJoin === undefined ? {} : { skewedJoin }),
    ...(skewedAggregation === undefined ? {} : { skewedAggregation }),
    ...(factor === undefined ? {} : { skewedFactor: factor }),
    ...(threshold === undefined ? {} : { skewedThresholdBytes: parseByteSize(command, '--skewed-threshold', threshold) }),
    ...(min === undefined ? {} : { minParallelism: min }),
    ...(max === undefined ? {} : { maxParallelism: max }),
    ...(volume === undefined ? {} : { dataVolumePerTaskBytes: parseByteSize(command, '--data-volume-per-task', volume) }),
    ...(source === undefined ? {} : { defaultSourceParallelism: source }),
  };
}
