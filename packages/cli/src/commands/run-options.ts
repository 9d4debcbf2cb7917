import {
  createRestartBackoffTimeStrategy,
  DEFAULT_RESTART_STRATEGY_OPTIONS,
  FAILOVER_STRATEGY_NAMES,
  type FailoverStrategyName,
  isEngineError,
  isFailoverStrategyName,
  type RestartStrategyOptions,
} from '@weft/engine';
import { integerFlag, usageError } from '../parse-command-args.js';

/** The `weft run` flags about failures: restart and failover strategies, heartbeats, cancellation. */
export const RECOVERY_FLAGS = {
  'restart-strategy': { type: 'string' },
  'restart-attempts': { type: 'string' },
  'restart-delay': { type: 'string' },
  'max-failures-per-interval': { type: 'string' },
  'failure-rate-interval': { type: 'string' },
  'initial-backoff': { type: 'string' },
  'max-backoff': { type: 'string' },
  'backoff-multiplier': { type: 'string' },
  'reset-backoff-threshold': { type: 'string' },
  jitter: { type: 'string' },
  'attempts-before-reset': { type: 'string' },
  'failover-strategy': { type: 'string' },
  'heartbeat-interval': { type: 'string' },
  'heartbeat-timeout': { type: 'string' },
  'cancel-timeout': { type: 'string' },
} as const;

export type RecoveryFlagValues = { readonly [K in keyof typeof RECOVERY_FLAGS]?: string | undefined };

const d = DEFAULT_RESTART_STRATEGY_OPTIONS;

/** The help text of the recovery flags. */
export const RECOVERY_USAGE = `Recovery (Flink's semantics; see docs/DESIGN.md):
  --restart-strategy S      none (default: the first failure fails the job; with --checkpoint-interval or
                            --approximate-recovery, Flink's: fixed-delay, 2147483647 attempts, 1 s apart)
                            | fixed-delay | failure-rate
                            | exponential-delay; --restart-attempts or --restart-delay alone means
                            fixed-delay
    fixed-delay:            --restart-attempts N (default ${d['fixed-delay'].attempts}), --restart-delay MS (default ${d['fixed-delay'].delayMs})
    failure-rate:           --max-failures-per-interval N (default ${d['failure-rate'].maxFailuresPerInterval}), --failure-rate-interval MS
                            (default ${d['failure-rate'].failureRateIntervalMs}), --restart-delay MS (default ${d['failure-rate'].delayMs})
    exponential-delay:      --initial-backoff MS (default ${d['exponential-delay'].initialBackoffMs}), --max-backoff MS (default ${d['exponential-delay'].maxBackoffMs}),
                            --backoff-multiplier X (default ${d['exponential-delay'].backoffMultiplier}), --jitter F in [0, 1] (default ${d['exponential-delay'].jitterFactor}),
                            --reset-backoff-threshold MS (default ${d['exponential-delay'].resetBackoffThresholdMs}),
                            --attempts-before-reset N (default: unlimited)
  --failover-strategy F     region (default: the failed task's pipelined region, the producers of
                            partitions it cannot read, and the consumers of what restarts) | all | individual
                            (only the failed task; for jobs whose tasks exchange no data)
  --heartbeat-interval MS   how often workers report (default 1000)
  --heartbeat-timeout MS    a worker silent this long is killed and its tasks fail (default 30000; keep
                            it above your longest single user-function call: heartbeats stop during one)
  --cancel-timeout MS       a cancelled task still running after this long gets its worker killed
                            (default 30000)`;

/** What the recovery flags resolve to, as `runJob` options. */
export interface RecoveryOptions {
  readonly restartStrategy?: RestartStrategyOptions;
  readonly failoverStrategy?: FailoverStrategyName;
  readonly heartbeatIntervalMs?: number;
  readonly heartbeatTimeoutMs?: number;
  readonly cancelTimeoutMs?: number;
}

const STRATEGY_FLAGS: Record<string, readonly (keyof RecoveryFlagValues)[]> = {
  none: [],
  'fixed-delay': ['restart-attempts', 'restart-delay'],
  'failure-rate': ['max-failures-per-interval', 'failure-rate-interval', 'restart-delay'],
  'exponential-delay': ['initial-backoff', 'max-backoff', 'backoff-multiplier', 'reset-backoff-threshold', 'jitter', 'attempts-before-reset'],
};
const ALL_STRATEGY_FLAGS = new Set(Object.values(STRATEGY_FLAGS).flat());

function integer(flag: keyof RecoveryFlagValues, values: RecoveryFlagValues, min: number): number | undefined {
  return integerFlag('run', `--${flag}`, values[flag], min);
}

function numberFlag(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw usageError('run', `--${flag} must be a number, got ${JSON.stringify(value)}`);
  return n;
}

function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/**
 * The restart strategy, failover strategy and timeouts from `weft run` flags; `WEFT_ERR_USAGE` naming the
 * flag for a malformed value, an unknown strategy, or a flag of another strategy than the one chosen.
 * `defaultRestart` applies when no restart flag is given at all.
 */
export function parseRecoveryFlags(values: RecoveryFlagValues, defaultRestart?: RestartStrategyOptions): RecoveryOptions {
  const given = [...ALL_STRATEGY_FLAGS].filter((f) => values[f] !== undefined);
  let type = values['restart-strategy'];
  if (type === undefined && given.length > 0) {
    if (given.every((f) => f === 'restart-attempts' || f === 'restart-delay')) type = 'fixed-delay';
    else throw usageError('run', `--${given[0]} needs --restart-strategy (${Object.keys(STRATEGY_FLAGS).join(', ')})`);
  }
  if (type !== undefined && !(type in STRATEGY_FLAGS)) throw usageError('run', `--restart-strategy must be one of ${Object.keys(STRATEGY_FLAGS).join(', ')}, got ${JSON.stringify(type)}`);
  if (type !== undefined) {
    const foreign = given.find((f) => !(STRATEGY_FLAGS[type as string] as readonly string[]).includes(f));
    if (foreign !== undefined) throw usageError('run', `--${foreign} does not apply to --restart-strategy ${type}`);
  }
  let restartStrategy: RestartStrategyOptions | undefined;
  switch (type) {
    case undefined:
      restartStrategy = defaultRestart;
      break;
    case 'none':
      restartStrategy = { type: 'none' };
      break;
    case 'fixed-delay':
      restartStrategy = defined({ type: 'fixed-delay' as const, attempts: integer('restart-attempts', values, 0), delayMs: integer('restart-delay', values, 0) });
      break;
    case 'failure-rate':
      restartStrategy = defined({
        type: 'failure-rate' as const,
        maxFailuresPerInterval: integer('max-failures-per-interval', values, 1),
        failureRateIntervalMs: integer('failure-rate-interval', values, 1),
        delayMs: integer('restart-delay', values, 0),
      });
      break;
    case 'exponential-delay':
      restartStrategy = defined({
        type: 'exponential-delay' as const,
        initialBackoffMs: integer('initial-backoff', values, 1),
        maxBackoffMs: integer('max-backoff', values, 1),
        backoffMultiplier: numberFlag('backoff-multiplier', values['backoff-multiplier']),
        resetBackoffThresholdMs: integer('reset-backoff-threshold', values, 1),
        jitterFactor: numberFlag('jitter', values.jitter),
        attemptsBeforeResetBackoff: integer('attempts-before-reset', values, 1),
      });
      break;
  }
  if (restartStrategy !== undefined) {
    try {
      createRestartBackoffTimeStrategy(restartStrategy);
    } catch (error) {
      if (!isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT')) throw error;
      throw usageError('run', `--restart-strategy ${restartStrategy.type}: ${error.message}`, error);
    }
  }
  const failover = values['failover-strategy'];
  if (failover !== undefined && !isFailoverStrategyName(failover)) {
    throw usageError('run', `--failover-strategy must be one of ${FAILOVER_STRATEGY_NAMES.join(', ')}, got ${JSON.stringify(failover)}`);
  }
  return defined({
    restartStrategy,
    failoverStrategy: failover,
    heartbeatIntervalMs: integer('heartbeat-interval', values, 1),
    heartbeatTimeoutMs: integer('heartbeat-timeout', values, 1),
    cancelTimeoutMs: integer('cancel-timeout', values, 1),
  });
}
