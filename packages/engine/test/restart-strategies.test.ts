import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRestartBackoffTimeStrategy, type ExponentialDelayRestartOptions, isEngineError, type RestartBackoffTimeStrategy } from '@weft/engine';

/** Flink's ManualClock: starts at 0, advanced by hand. */
function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let time = 0;
  return { now: () => time, advance: (ms) => void (time += ms) };
}

const INT_MAX = 2147483647;

function exponential(clock: () => number, o: Omit<ExponentialDelayRestartOptions, 'type' | 'clock'>): RestartBackoffTimeStrategy {
  return createRestartBackoffTimeStrategy({ type: 'exponential-delay', clock, ...o });
}

/** Every value `produce(random)` takes as the random source sweeps [0, 1) (Flink's assertCorrectRandomRange). */
function valuesOver(produce: (random: () => number) => number): number[] {
  const seen = new Set<number>();
  for (let k = 0; k < 200; k++) seen.add(produce(() => k / 200));
  return [...seen].sort((a, b) => a - b);
}

describe('exponential-delay restart strategy', () => {
  it('reproduces DESIGN.md: initial 4 ms, multiplier 2.3, no jitter, failures 301 ms apart → 4, 9, 21', () => {
    const clock = manualClock();
    const s = exponential(clock.now, { initialBackoffMs: 4, maxBackoffMs: 300, backoffMultiplier: 2.3, resetBackoffThresholdMs: INT_MAX, jitterFactor: 0, attemptsBeforeResetBackoff: 10 });
    const backoffs: number[] = [];
    for (let i = 0; i < 3; i++) {
      assert.equal(s.notifyFailure(new Error('boom')), true);
      backoffs.push(s.getBackoffTimeMs());
      clock.advance(301);
    }
    assert.deepEqual(backoffs, [4, 9, 21]);
  });

  it('allows attemptsBeforeResetBackoff + 1 failures, then refuses (Flink testMaxAttempts)', () => {
    const clock = manualClock();
    const s = exponential(clock.now, { initialBackoffMs: 1, maxBackoffMs: 3, backoffMultiplier: 1.2, resetBackoffThresholdMs: 10, jitterFactor: 0.25, attemptsBeforeResetBackoff: 13 });
    for (let i = 0; i <= 13; i++) {
      assert.equal(s.canRestart(), true, `attempt ${i}`);
      assert.equal(s.notifyFailure(), true);
      clock.advance(4);
    }
    assert.equal(s.canRestart(), false);
  });

  it('refuses getBackoffTimeMs before any failure with WEFT_ERR_ILLEGAL_STATE (Flink testNotCallNotifyFailure)', () => {
    const s = exponential(manualClock().now, { initialBackoffMs: 42, maxBackoffMs: 45, backoffMultiplier: 2, resetBackoffThresholdMs: 8, jitterFactor: 0, attemptsBeforeResetBackoff: 10 });
    assert.throws(() => s.getBackoffTimeMs(), (e: unknown) => isEngineError(e, 'WEFT_ERR_ILLEGAL_STATE'));
  });

  it('starts at the initial backoff (Flink testInitialBackoff)', () => {
    const s = exponential(manualClock().now, { initialBackoffMs: 42, maxBackoffMs: 45, backoffMultiplier: 2, resetBackoffThresholdMs: 8, jitterFactor: 0, attemptsBeforeResetBackoff: INT_MAX });
    s.notifyFailure();
    assert.equal(s.getBackoffTimeMs(), 42);
  });

  it('never exceeds the max backoff, jitter included (Flink testMaxBackoff)', () => {
    const s = exponential(manualClock().now, { initialBackoffMs: 1, maxBackoffMs: 6, backoffMultiplier: 2, resetBackoffThresholdMs: 8, jitterFactor: 0.25, attemptsBeforeResetBackoff: INT_MAX, random: () => 0.999 });
    for (let i = 0; i < 10; i++) {
      s.notifyFailure();
      assert.ok(s.getBackoffTimeMs() <= 6);
    }
  });

  it('grows until the reset threshold passes, then starts over (Flink testResetBackoff)', () => {
    const clock = manualClock();
    const s = exponential(clock.now, { initialBackoffMs: 1, maxBackoffMs: 5, backoffMultiplier: 2, resetBackoffThresholdMs: 8, jitterFactor: 0.25, attemptsBeforeResetBackoff: INT_MAX });
    assert.equal(s.notifyFailure(), true);
    clock.advance(8 + s.getBackoffTimeMs() - 1);
    assert.equal(s.notifyFailure(), true);
    assert.equal(s.getBackoffTimeMs(), 2, 'backoff should be increased');
    clock.advance(8 + s.getBackoffTimeMs());
    assert.equal(s.notifyFailure(), true);
    assert.equal(s.getBackoffTimeMs(), 1, 'backoff should be reset');
  });

  it('adds jitter in [-backoff*factor, +backoff*factor], capped at the max (Flink testJitter)', () => {
    const clock = manualClock();
    const after = (failures: number) =>
      valuesOver((random) => {
        const s = exponential(clock.now, { initialBackoffMs: 2, maxBackoffMs: 7, backoffMultiplier: 2, resetBackoffThresholdMs: INT_MAX, jitterFactor: 0.25, attemptsBeforeResetBackoff: INT_MAX, random });
        for (let i = 0; i < failures; i++) {
          clock.advance(8);
          assert.equal(s.notifyFailure(), true);
        }
        return s.getBackoffTimeMs();
      });
    assert.deepEqual(after(2), [3, 4, 5]);
    assert.deepEqual(after(3), [6, 7]);
    assert.deepEqual(after(4), [7]);
  });

  it('keeps jitter factor 1 within [initial, max] (Flink testJitterNoHigherThanMax)', () => {
    const clock = manualClock();
    const after = (failures: number) =>
      valuesOver((random) => {
        const s = exponential(clock.now, { initialBackoffMs: 1, maxBackoffMs: 7, backoffMultiplier: 2, resetBackoffThresholdMs: INT_MAX, jitterFactor: 1, attemptsBeforeResetBackoff: INT_MAX, random });
        for (let i = 0; i < failures; i++) {
          clock.advance(8);
          s.notifyFailure();
        }
        return s.getBackoffTimeMs();
      });
    assert.deepEqual(after(1), [1, 2]);
    assert.deepEqual(after(2), [1, 2, 3, 4]);
    assert.deepEqual(after(3), [1, 2, 3, 4, 5, 6, 7]);
  });

  it('combines growth, reset and jitter as Flink testMultipleSettings does', () => {
    const clock = manualClock();
    const s = exponential(clock.now, { initialBackoffMs: 1, maxBackoffMs: 9, backoffMultiplier: 2, resetBackoffThresholdMs: 80, jitterFactor: 0.25, attemptsBeforeResetBackoff: INT_MAX });
    assert.equal(s.notifyFailure(), true);
    assert.equal(s.canRestart(), true);
    assert.equal(s.getBackoffTimeMs(), 1);
    clock.advance(81);
    assert.equal(s.notifyFailure(), true);
    assert.equal(s.getBackoffTimeMs(), 1, 'initial again after the threshold');
    clock.advance(4);
    assert.equal(s.notifyFailure(), true);
    assert.equal(s.getBackoffTimeMs(), 2, 'grows before the threshold');
    clock.advance(80 + 9 + 1);
    assert.equal(s.notifyFailure(), true);
    assert.equal(s.getBackoffTimeMs(), 1, 'reset after the threshold');
    clock.advance(10);
    assert.equal(s.notifyFailure(), true);
    assert.equal(s.canRestart(), true);
    assert.equal(s.getBackoffTimeMs(), 2, 'still grows');
  });

  /** Flink's checkMultipleExceptionsAreMerged: within a pending backoff, only the first failure is new. */
  function checkMerged(clock: ReturnType<typeof manualClock>, s: RestartBackoffTimeStrategy, expectedBackoff: number): void {
    let expectNew = true;
    for (let elapsed = 0; elapsed < expectedBackoff; elapsed++) {
      for (let i = 0; i < 10; i++) {
        assert.equal(s.notifyFailure(), expectNew);
        expectNew = false;
        assert.equal(s.canRestart(), true);
        assert.equal(s.getBackoffTimeMs(), expectedBackoff - elapsed);
      }
      clock.advance(1);
    }
  }

  it('merges failures that arrive while a restart is pending into that attempt (Flink testMergeMultipleExceptionsIntoOneAttempt)', () => {
    const clock = manualClock();
    const s = exponential(clock.now, { initialBackoffMs: 2, maxBackoffMs: 6, backoffMultiplier: 2, resetBackoffThresholdMs: 80, jitterFactor: 0, attemptsBeforeResetBackoff: 3 });
    checkMerged(clock, s, 2);
    clock.advance(1);
    checkMerged(clock, s, 4);
    clock.advance(1);
    checkMerged(clock, s, 6);
    clock.advance(1);
    assert.equal(s.notifyFailure(), true);
    assert.equal(s.canRestart(), false);
  });

  it('keeps merging right after each reset (Flink testMergingExceptionsWorksWithResetting)', () => {
    const clock = manualClock();
    const s = exponential(clock.now, { initialBackoffMs: 2, maxBackoffMs: 6, backoffMultiplier: 2, resetBackoffThresholdMs: 80, jitterFactor: 0, attemptsBeforeResetBackoff: 3 });
    for (let round = 0; round < 10; round++) {
      checkMerged(clock, s, 2);
      clock.advance(1);
      checkMerged(clock, s, 4);
      clock.advance(1);
      checkMerged(clock, s, 6);
      clock.advance(80);
    }
  });

  it('reads Date.now when no clock is injected', () => {
    const s = createRestartBackoffTimeStrategy({ type: 'exponential-delay', initialBackoffMs: 60_000, maxBackoffMs: 60_000, jitterFactor: 0 });
    assert.equal(s.notifyFailure(), true);
    const left = s.getBackoffTimeMs();
    assert.ok(left > 50_000 && left <= 60_000, String(left));
    assert.equal(s.notifyFailure(), false, 'a second failure right away merges into the pending restart');
  });
});

describe('fixed-delay restart strategy', () => {
  it('allows exactly `attempts` restarts, and canRestart does not count (Flink testNumberOfRestarts)', () => {
    const s = createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 3, delayMs: 0 });
    for (let left = 3; left > 0; left--) {
      assert.equal(s.notifyFailure(), true);
      assert.equal(s.canRestart(), true);
      assert.equal(s.canRestart(), true);
    }
    s.notifyFailure();
    assert.equal(s.canRestart(), false);
  });

  it('waits the configured delay (Flink testBackoffTime)', () => {
    assert.equal(createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 1, delayMs: 10_000 }).getBackoffTimeMs(), 10_000);
  });

  it('with zero attempts fails on the first failure', () => {
    const s = createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 0, delayMs: 5 });
    s.notifyFailure();
    assert.equal(s.canRestart(), false);
  });
});

describe('failure-rate restart strategy', () => {
  it('keeps restarting while failures stay under the rate (Flink testManyFailuresWithinRate)', () => {
    const clock = manualClock();
    const s = createRestartBackoffTimeStrategy({ type: 'failure-rate', maxFailuresPerInterval: 1, failureRateIntervalMs: 1, delayMs: 0, clock: clock.now });
    for (let i = 0; i < 3; i++) {
      s.notifyFailure();
      assert.equal(s.canRestart(), true);
      clock.advance(2);
    }
    assert.equal(s.canRestart(), true);
  });

  it('stops once more than maxFailuresPerInterval failures fall in one interval (Flink testFailuresExceedingRate)', () => {
    const s = createRestartBackoffTimeStrategy({ type: 'failure-rate', maxFailuresPerInterval: 3, failureRateIntervalMs: 10_000, delayMs: 0, clock: manualClock().now });
    for (let i = 0; i < 3; i++) {
      s.notifyFailure();
      assert.equal(s.canRestart(), true);
    }
    s.notifyFailure();
    assert.equal(s.canRestart(), false);
  });

  it('allows restarting again once the oldest failure leaves the interval', () => {
    const clock = manualClock();
    const s = createRestartBackoffTimeStrategy({ type: 'failure-rate', maxFailuresPerInterval: 2, failureRateIntervalMs: 100, delayMs: 0, clock: clock.now });
    s.notifyFailure();
    clock.advance(10);
    s.notifyFailure();
    clock.advance(10);
    s.notifyFailure();
    assert.equal(s.canRestart(), false);
    clock.advance(80);
    assert.equal(s.canRestart(), false, 'exactly one interval after the oldest is not enough');
    clock.advance(1);
    assert.equal(s.canRestart(), true);
  });

  it('waits the configured delay (Flink testBackoffTime)', () => {
    assert.equal(createRestartBackoffTimeStrategy({ type: 'failure-rate', maxFailuresPerInterval: 1, failureRateIntervalMs: 1, delayMs: 10_000 }).getBackoffTimeMs(), 10_000);
  });
});

describe('no restart strategy', () => {
  it('never restarts and waits nothing', () => {
    const s = createRestartBackoffTimeStrategy({ type: 'none' });
    assert.equal(s.canRestart(), false);
    assert.equal(s.notifyFailure(), true);
    assert.equal(s.canRestart(), false);
    assert.equal(s.getBackoffTimeMs(), 0);
  });
});

describe('restart strategy options and names', () => {
  const rejects = (options: unknown, field: string) =>
    assert.throws(() => createRestartBackoffTimeStrategy(options as never), (e: unknown) => isEngineError(e, 'WEFT_ERR_INVALID_ARGUMENT') && e.field === field, field);

  it('refuses invalid options naming the option', () => {
    rejects({ type: 'fixed-delay', attempts: -1, delayMs: 0 }, 'options.attempts');
    rejects({ type: 'fixed-delay', attempts: 1, delayMs: -5 }, 'options.delayMs');
    rejects({ type: 'fixed-delay', attempts: 1.5, delayMs: 0 }, 'options.attempts');
    rejects({ type: 'failure-rate', maxFailuresPerInterval: 0 }, 'options.maxFailuresPerInterval');
    rejects({ type: 'failure-rate', failureRateIntervalMs: 0 }, 'options.failureRateIntervalMs');
    rejects({ type: 'exponential-delay', initialBackoffMs: 0 }, 'options.initialBackoffMs');
    rejects({ type: 'exponential-delay', initialBackoffMs: 10, maxBackoffMs: 5 }, 'options.initialBackoffMs');
    rejects({ type: 'exponential-delay', backoffMultiplier: 1 }, 'options.backoffMultiplier');
    rejects({ type: 'exponential-delay', resetBackoffThresholdMs: 0 }, 'options.resetBackoffThresholdMs');
    rejects({ type: 'exponential-delay', jitterFactor: 1.5 }, 'options.jitterFactor');
    rejects({ type: 'exponential-delay', attemptsBeforeResetBackoff: 0 }, 'options.attemptsBeforeResetBackoff');
    rejects({ type: 'exponential-delay', clock: 5 }, 'options.clock');
    rejects({ type: 'sometimes' }, 'options.type');
    rejects(null, 'options');
  });

  it('reports an invalid number as it was given (Infinity, NaN), not as JSON writes it', () => {
    const message = (options: unknown): string => {
      try {
        createRestartBackoffTimeStrategy(options as never);
      } catch (error) {
        return (error as Error).message;
      }
      return assert.fail('expected the options to be refused');
    };
    assert.match(message({ type: 'exponential-delay', maxBackoffMs: Infinity }), /options\.maxBackoffMs.*got Infinity/);
    assert.match(message({ type: 'fixed-delay', delayMs: Number.NaN }), /options\.delayMs.*got NaN/);
    assert.match(message({ type: 'exponential-delay', backoffMultiplier: -Infinity }), /options\.backoffMultiplier.*got -Infinity/);
    assert.match(message({ type: 'fixed-delay', attempts: '3' }), /options\.attempts.*got "3"/);
  });

  it('names itself and its settings for "recovery is suppressed by …" messages', () => {
    assert.equal(String(createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 3, delayMs: 1000 })), 'FixedDelayRestartBackoffTimeStrategy(attempts=3, delayMs=1000)');
    assert.equal(String(createRestartBackoffTimeStrategy({ type: 'none' })), 'NoRestartBackoffTimeStrategy');
    assert.match(String(createRestartBackoffTimeStrategy({ type: 'failure-rate' })), /^FailureRateRestartBackoffTimeStrategy\(maxFailuresPerInterval=1, failureRateIntervalMs=60000, delayMs=1000\)$/);
    assert.match(String(createRestartBackoffTimeStrategy({ type: 'exponential-delay' })), /^ExponentialDelayRestartBackoffTimeStrategy\(initialBackoffMs=1000, maxBackoffMs=60000, backoffMultiplier=1.5,/);
    assert.equal(createRestartBackoffTimeStrategy({ type: 'exponential-delay' }).name, 'exponential-delay');
  });
});
