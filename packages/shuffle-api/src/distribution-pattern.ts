import { invalidArgument } from './shuffle-error.js';

/** How producer subtasks of an edge feed consumer subtasks. */
export const DistributionPattern = {
  ALL_TO_ALL: 'ALL_TO_ALL',
  POINTWISE: 'POINTWISE',
} as const;

export type DistributionPattern = (typeof DistributionPattern)[keyof typeof DistributionPattern];

export function isDistributionPattern(value: unknown): value is DistributionPattern {
  return value === 'ALL_TO_ALL' || value === 'POINTWISE';
}

/** A half-open range of subtask indexes `[start, end)`. */
export interface IndexRange {
  readonly start: number;
  readonly end: number;
}

function checkCounts(producers: number, consumers: number): void {
  if (!Number.isInteger(producers) || producers < 1) throw invalidArgument('producers', `expected an integer >= 1, got ${producers}`);
  if (!Number.isInteger(consumers) || consumers < 1) throw invalidArgument('consumers', `expected an integer >= 1, got ${consumers}`);
}

function checkIndex(field: string, index: number, count: number): void {
  if (!Number.isInteger(index) || index < 0 || index >= count) {
    throw invalidArgument(field, `expected an integer in [0, ${count}), got ${index}`);
  }
}

/**
 * POINTWISE: the consumers producer `i` of `producers` feeds, among `consumers`
 * (S == T: i→i; S > T: one consumer; S < T: `[(i*T+S-1)/S, ((i+1)*T+S-1)/S)`, integer division).
 */
export function pointwiseConsumersOf(producer: number, producers: number, consumers: number): IndexRange {
  checkCounts(producers, consumers);
  checkIndex('producer', producer, producers);
  if (producers === consumers) return { start: producer, end: producer + 1 };
  if (producers > consumers) {
    // consumer j reads [j*S/T, (j+1)*S/T): find the j whose range holds `producer`
    for (let j = Math.floor((producer * consumers) / producers); j < consumers; j++) {
      const start = Math.floor((j * producers) / consumers);
      const end = Math.floor(((j + 1) * producers) / consumers);
      if (producer >= start && producer < end) return { start: j, end: j + 1 };
    }
    throw invalidArgument('producer', `${producer} is outside [0, ${producers})`);
  }
  return {
    start: Math.floor((producer * consumers + producers - 1) / producers),
    end: Math.floor(((producer + 1) * consumers + producers - 1) / producers),
  };
}

/** POINTWISE: the producers consumer `j` of `consumers` reads, among `producers`. */
export function pointwiseProducersOf(consumer: number, producers: number, consumers: number): IndexRange {
  checkCounts(producers, consumers);
  checkIndex('consumer', consumer, consumers);
  if (producers === consumers) return { start: consumer, end: consumer + 1 };
  if (producers > consumers) {
    return {
      start: Math.floor((consumer * producers) / consumers),
      end: Math.floor(((consumer + 1) * producers) / consumers),
    };
  }
  for (let i = Math.floor((consumer * producers) / consumers); i < producers; i++) {
    const range = pointwiseConsumersOf(i, producers, consumers);
    if (consumer >= range.start && consumer < range.end) return { start: i, end: i + 1 };
  }
  throw invalidArgument('consumer', `${consumer} is outside [0, ${consumers})`);
}
