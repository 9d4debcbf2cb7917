import { invalidEngineArgument } from '../errors/engine-error.js';
import { ExponentialDelayRestartBackoffTimeStrategy } from './exponential-delay-restart-backoff-time-strategy.js';
import { FailureRateRestartBackoffTimeStrategy } from './failure-rate-restart-backoff-time-strategy.js';
import { FixedDelayRestartBackoffTimeStrategy } from './fixed-delay-restart-backoff-time-strategy.js';
import { NoRestartBackoffTimeStrategy } from './no-restart-backoff-time-strategy.js';
import type { RestartBackoffTimeStrategy, RestartStrategyOptions } from './restart-backoff-time-strategy.js';

const TYPES = ['fixed-delay', 'failure-rate', 'exponential-delay', 'none'];

/**
 * docs/DESIGN.md contract 3: a restart backoff time strategy from its options (validated here; an invalid one
 * throws `WEFT_ERR_INVALID_ARGUMENT` naming the option, e.g. `options.delayMs`). A new strategy each call:
 * strategies are stateful, one per job.
 */
export function createRestartBackoffTimeStrategy(options: RestartStrategyOptions): RestartBackoffTimeStrategy {
  if (typeof options !== 'object' || options === null) {
    throw invalidEngineArgument('options', `expected an object with a type (${TYPES.join(', ')}), got ${options === null ? 'null' : typeof options}`);
  }
  switch (options.type) {
    case 'fixed-delay':
      return new FixedDelayRestartBackoffTimeStrategy(options);
    case 'failure-rate':
      return new FailureRateRestartBackoffTimeStrategy(options);
    case 'exponential-delay':
      return new ExponentialDelayRestartBackoffTimeStrategy(options);
    case 'none':
      return new NoRestartBackoffTimeStrategy();
    default:
      throw invalidEngineArgument('options.type', `unknown restart strategy ${JSON.stringify((options as { type?: unknown }).type)}; expected one of ${TYPES.join(', ')}`);
  }
}
