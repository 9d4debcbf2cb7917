import { JOB_EVENT_FORMAT_VERSION, type LoggedJobEvent } from '@weft/engine';
import type { Logger } from '@weft/shuffle-api';
import { eventLogError } from './event-log-errors.js';

/** One stored entry as an implementation read it: a candidate event, or why it is not one. */
export type StoredEntry = { readonly ok: true; readonly value: unknown; readonly at: string } | { readonly ok: false; readonly problem: string; readonly at: string };

/** The whole events of a run, and the position of a torn last entry that was left out, if any. */
export interface DecodedHistory {
  readonly events: LoggedJobEvent[];
  /** Where the torn last entry is (an implementation's row or stream id), to repair it under a lease. */
  readonly tornTail: string | undefined;
}

function problemOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not an object';
  const e = value as Record<string, unknown>;
  if (!Number.isSafeInteger(e['seq']) || (e['seq'] as number) < 1) return 'no seq';
  if (!Number.isSafeInteger(e['epoch']) || (e['epoch'] as number) < 1) return 'no epoch';
  if (typeof e['atMs'] !== 'number') return 'no atMs';
  if (typeof e['type'] !== 'string') return 'no type';
  if (!('data' in e)) return 'no data';
  return undefined;
}

/**
 * Turns stored entries (in order) into the run's history: a damaged last entry is left out with a warning
 * (a write torn by a crash); a damaged entry followed by others, or an event of a newer format version, is
 * refused with WEFT_ERR_EVENT_LOG.
 */
export function decodeHistory(request: { jobId: string; description: string; entries: readonly StoredEntry[]; logger: Logger }): DecodedHistory {
  const { jobId, description, entries, logger } = request;
  const events: LoggedJobEvent[] = [];
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as StoredEntry;
    let problem = entry.ok ? undefined : entry.problem;
    if (entry.ok) {
      const v = (entry.value as { v?: unknown } | null)?.v;
      if (typeof v === 'number' && Number.isInteger(v) && v > JOB_EVENT_FORMAT_VERSION) {
        throw eventLogError({
          jobId,
          description,
          problem: `event ${entry.at} was written by event format version ${v}; this weft reads version ${JOB_EVENT_FORMAT_VERSION} — upgrade weft to resume this run`,
          context: { version: v },
        });
      }
      problem = v === JOB_EVENT_FORMAT_VERSION ? problemOf(entry.value) : `unknown format version ${JSON.stringify(v)}`;
    }
    if (problem === undefined && entry.ok) {
      events.push(entry.value as LoggedJobEvent);
      continue;
    }
    if (i === entries.length - 1) {
      logger.warn({ jobId, at: entry.at, problem, events: events.length }, 'job event log: the last event is torn; the history ends at the last whole event');
      return { events, tornTail: entry.at };
    }
    throw eventLogError({
      jobId,
      description,
      problem: `the log is corrupt: event ${entry.at} is damaged (${problem}) and ${entries.length - 1 - i} event(s) follow it`,
      context: { at: entry.at },
    });
  }
  return { events, tornTail: undefined };
}
