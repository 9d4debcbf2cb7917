import { EngineError } from '@weft/engine';

/** The faults `weft run --inject-faults` knows. */
export const FAULT_KINDS = ['throw', 'kill-worker', 'delete-partition', 'corrupt-partition', 'restart-redis'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** One fault asked for: what, where (or seeded random), when (or seeded random). */
export interface FaultRequest {
  readonly kind: FaultKind;
  /** An execution vertex (`throw`, `kill-worker`) or a result partition (`delete-partition`, `corrupt-partition`). */
  readonly target?: string;
  /** The record (`throw`, `kill-worker`) or the region deployment (`restart-redis`) it fires at. */
  readonly at?: number;
}

export interface FaultSpec {
  /** The seed of every random choice; absent: a random seed (reported, so the run can be replayed). */
  readonly seed?: number;
  readonly faults: readonly FaultRequest[];
}

/** The grammar, for `weft run --help` and errors. */
export const FAULT_SPEC_GRAMMAR = `SPEC is a comma-separated list of faults and an optional seed:
    SPEC   := ITEM [,ITEM]...        ITEM := seed=N | KIND[:TARGET][@AT]
  KIND:
    throw              a task throws (WEFT_ERR_INJECTED_FAULT) at record AT
    kill-worker        the worker process running a task is killed (SIGKILL) at record AT
                       (needs --executor workers)
    delete-partition   a committed blocking partition's data object is deleted before its first
                       consumer is deployed (consumers fail with SHF_ERR_PARTITION_NOT_FOUND)
    corrupt-partition  one byte of a committed partition's data is flipped before its first consumer
                       is deployed (consumers fail with SHF_ERR_DATA_CORRUPTED)
    restart-redis      the Redis metadata store is restarted before region deployment AT (needs
                       --meta redis://…; uses DEBUG RESTART where the server allows it, else drops
                       every client connection)
  TARGET: an execution vertex such as sort#1 (throw, kill-worker) or a result partition such as
          count->top-words#0 (delete-partition, corrupt-partition); default: picked at random
  AT: a record index, 0-based, counting the records a task reads (or emits, for a source); a task with
      fewer records fires after its last (default: random in [0, 1000)); for restart-redis, the region
      deployment it precedes (default: random among the job's deployments, not the first)
  Random choices are drawn from seed=N (default: a random seed, printed), so a run can be replayed.
  Only the first attempt of a task that runs is faulted: its restart runs clean.
  Example: --inject-faults 'seed=7,throw,delete-partition'  or  'kill-worker:sort#2@5000'`;

function specError(problem: string): EngineError {
  return new EngineError('WEFT_ERR_USAGE', `--inject-faults: ${problem}`, { context: { command: 'run', field: '--inject-faults' } });
}

function nonNegativeInteger(text: string, what: string): number {
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text))) throw specError(`${what} must be an integer >= 0, got ${JSON.stringify(text)}`);
  return Number(text);
}

/**
 * Parses a fault spec (see FAULT_SPEC_GRAMMAR). Throws `WEFT_ERR_USAGE` naming the bad item. Targets are
 * checked against the job later, once it is planned.
 */
export function parseFaultSpec(text: string): FaultSpec {
  const items = text.split(',').map((item) => item.trim());
  if (items.length === 0 || items.some((item) => item === '')) throw specError(`empty fault in ${JSON.stringify(text)}`);
  let seed: number | undefined;
  const faults: FaultRequest[] = [];
  for (const item of items) {
    if (item.startsWith('seed=')) {
      if (seed !== undefined) throw specError('seed= given twice');
      seed = nonNegativeInteger(item.slice('seed='.length), 'seed');
      if (seed > 0xffffffff) throw specError(`seed must be below 2^32, got ${seed}`);
      continue;
    }
    const atSign = item.lastIndexOf('@');
    const head = atSign === -1 ? item : item.slice(0, atSign);
    const at = atSign === -1 ? undefined : nonNegativeInteger(item.slice(atSign + 1), `the @ of ${JSON.stringify(item)}`);
    const colon = head.indexOf(':');
    const kind = colon === -1 ? head : head.slice(0, colon);
    const target = colon === -1 ? undefined : head.slice(colon + 1);
    if (!(FAULT_KINDS as readonly string[]).includes(kind)) throw specError(`unknown fault ${JSON.stringify(kind)}; expected one of ${FAULT_KINDS.join(', ')} (or seed=N)`);
    if (target === '') throw specError(`empty target in ${JSON.stringify(item)}`);
    if (kind === 'restart-redis' && target !== undefined) throw specError(`restart-redis takes no target, got ${JSON.stringify(target)} (use restart-redis@N for the deployment)`);
    if ((kind === 'delete-partition' || kind === 'corrupt-partition') && at !== undefined) throw specError(`${kind} takes no @ (it fires before the partition's first consumer is deployed)`);
    if (kind === 'restart-redis' && at === 0) throw specError('restart-redis@N counts deployments from 1');
    faults.push({ kind: kind as FaultKind, ...(target === undefined ? {} : { target }), ...(at === undefined ? {} : { at }) });
  }
  if (faults.length === 0) throw specError('no fault given (only a seed)');
  return { ...(seed === undefined ? {} : { seed }), faults };
}

/** The spec back as text (with its seed), for reports: `weft run --inject-faults` accepts it as is. */
export function formatFaultSpec(spec: FaultSpec): string {
  const items = spec.faults.map((f) => `${f.kind}${f.target === undefined ? '' : `:${f.target}`}${f.at === undefined ? '' : `@${f.at}`}`);
  return [...(spec.seed === undefined ? [] : [`seed=${spec.seed}`]), ...items].join(',');
}
