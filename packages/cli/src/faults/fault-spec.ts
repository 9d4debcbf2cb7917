import { EngineError, JOB_EVENT_TYPES } from '@weft/engine';

/** The faults `weft run --inject-faults` knows. */
export const FAULT_KINDS = ['throw', 'kill-worker', 'kill-worker-after-pre-commit', 'kill-worker-before-commit', 'delete-partition', 'corrupt-partition', 'restart-redis', 'kill-shuffle-server', 'pause-shuffle-server', 'kill-job-master'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The kinds that kill a task's worker at a moment of a checkpoint (AT: the checkpoint id). */
export const CHECKPOINT_FAULT_KINDS = ['kill-worker-after-pre-commit', 'kill-worker-before-commit'] as const;
export type CheckpointFaultKind = (typeof CHECKPOINT_FAULT_KINDS)[number];

export function isCheckpointFaultKind(kind: FaultKind): kind is CheckpointFaultKind {
  return (CHECKPOINT_FAULT_KINDS as readonly string[]).includes(kind);
}

/** The kinds that hit the shuffle server holding a partition (`weft run --shuffle-servers`). */
export const SERVER_FAULT_KINDS = ['kill-shuffle-server', 'pause-shuffle-server'] as const;
export type ServerFaultKind = (typeof SERVER_FAULT_KINDS)[number];

/**
 * When a server fault fires, in the life of its partition: `push` — while the producer pushes it (the
 * server has its first bytes); `commit` — during its commit, between the commit index and the server's
 * own commit record; `committed` — after it committed, before its first consumer is deployed; `fetch` —
 * while a consumer fetches it (the first piece of data sent).
 */
export const SERVER_FAULT_POINTS = ['push', 'commit', 'committed', 'fetch'] as const;
export type ServerFaultPoint = (typeof SERVER_FAULT_POINTS)[number];

/** How long pause-shuffle-server keeps the server stopped when the spec does not say. */
export const DEFAULT_PAUSE_MS = 3000;

export function isServerFaultKind(kind: FaultKind): kind is ServerFaultKind {
  return (SERVER_FAULT_KINDS as readonly string[]).includes(kind);
}

/** One fault asked for: what, where (or seeded random), when (or seeded random). */
export interface FaultRequest {
  readonly kind: FaultKind;
  /**
   * An execution vertex (`throw`, the `kill-worker` kinds), a result partition (`delete-partition`,
   * `corrupt-partition`, the server kinds) or a job event type (`kill-job-master`).
   */
  readonly target?: string;
  /** The record (`throw`, `kill-worker`), the checkpoint (the checkpoint kill-worker kinds), the region deployment (`restart-redis`) or the event count (`kill-job-master`) it fires at. */
  readonly at?: number;
  /** Server faults: the point in the partition's life it fires at. */
  readonly point?: ServerFaultPoint;
  /** pause-shuffle-server: how long the server stays stopped (ms). */
  readonly pauseMs?: number;
}

export interface FaultSpec {
  /** The seed of every random choice; absent: a random seed (reported, so the run can be replayed). */
  readonly seed?: number;
  readonly faults: readonly FaultRequest[];
}

/** The grammar, for `weft run --help` and errors. */
export const FAULT_SPEC_GRAMMAR = `SPEC is a comma-separated list of faults and an optional seed:
    SPEC   := ITEM [,ITEM]...        ITEM := seed=N | KIND[:TARGET][@AT]
                                     | SERVER-KIND[:TARGET][@POINT][~MS]
  KIND:
    throw              a task throws (WEFT_ERR_INJECTED_FAULT) at record AT
    kill-worker        the worker process running a task is killed (SIGKILL) at record AT
                       (needs --executor workers)
    kill-worker-after-pre-commit
                       the worker process running a task is killed (SIGKILL) once the task made
                       checkpoint AT durable (its two-phase-commit sinks pre-committed it), before it
                       acknowledges it: checkpoint AT never completes (AT from 1, default: random in
                       [1, 4); when checkpoint AT is aborted before it gets there, the first later
                       one that does; needs --checkpoint-interval and --executor workers)
    kill-worker-before-commit
                       the worker process running a task is killed (SIGKILL) when the word that
                       checkpoint AT completed reaches the task, before its sinks commit it: the
                       restore commits it (AT as for kill-worker-after-pre-commit)
    delete-partition   a committed blocking partition's data object is deleted before its first
                       consumer is deployed (consumers fail with SHF_ERR_PARTITION_NOT_FOUND)
    corrupt-partition  one byte of a committed partition's data is flipped before its first consumer
                       is deployed (consumers fail with SHF_ERR_DATA_CORRUPTED)
    restart-redis      the Redis metadata store is restarted before region deployment AT (needs
                       --meta redis://…; uses DEBUG RESTART where the server allows it, else drops
                       every client connection)
    kill-job-master    this weft run kills itself (SIGKILL) the moment its job event log durably holds
                       AT events of type TARGET, counting every earlier run of the --job-id: so the
                       same command run again resumes the job and is not killed again (TARGET: an
                       event type such as task-finished, sink-published; default task-finished; AT from
                       1, default: random in [1, tasks] for task-deployed and task-finished, else 1)
  SERVER-KIND (with --shuffle-servers; the servers must run on this machine — their registry record
  gives the pid and --dir — and, for the points push, commit and fetch, with WEFT_SERVER_FAULT_HOOKS=1,
  where the server kills or stops itself at exactly that point when the fault is armed in Redis):
    kill-shuffle-server   the server holding the partition is killed (SIGKILL) at POINT
    pause-shuffle-server  the server holding the partition is stopped (SIGSTOP) at POINT, and
                          continued (SIGCONT) MS milliseconds later (default ${DEFAULT_PAUSE_MS})
  POINT: push (while its producer pushes it), commit (between the commit index and the server's own
         commit record), committed (after its commit, before its first consumer is deployed), fetch
         (while a consumer fetches it); default: picked at random
  With --shuffle-servers, delete-partition / corrupt-partition delete the object, or flip one of its
  bytes, in the holding server's --dir.
  TARGET: an execution vertex such as sort#1 (throw, the kill-worker kinds) or a result partition such as
          count->top-words#0 (delete-partition, corrupt-partition, the server kinds); default: picked at
          random; a job event type for kill-job-master
  AT: a record index, 0-based, counting the records a task reads (or emits, for a source); a task with
      fewer records fires after its last (default: random in [0, 1000)); a checkpoint id for the
      checkpoint kill-worker kinds (a task that takes no such checkpoint is not killed); for restart-redis, the region
      deployment it precedes (default: random among the job's deployments, not the first)
  Random choices are drawn from seed=N (default: a random seed, printed), so a run can be replayed.
  Only the first attempt of a task that runs is faulted: its restart runs clean.
  Example: --inject-faults 'seed=7,throw,delete-partition'  or  'kill-worker:sort#2@5000'
           or  'kill-shuffle-server:sort-assign->sort#2@commit'  or  'pause-shuffle-server@fetch~2000'
           or  'kill-job-master:task-finished@3'`;

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
    let head = atSign === -1 ? item : item.slice(0, atSign);
    if (atSign === -1 && (SERVER_FAULT_KINDS as readonly string[]).some((k) => head.startsWith(`${k}~`))) head = head.slice(0, head.indexOf('~'));
    const colon = head.indexOf(':');
    const kind = colon === -1 ? head : head.slice(0, colon);
    const target = colon === -1 ? undefined : head.slice(colon + 1);
    if (!(FAULT_KINDS as readonly string[]).includes(kind)) throw specError(`unknown fault ${JSON.stringify(kind)}; expected one of ${FAULT_KINDS.join(', ')} (or seed=N)`);
    if (target === '') throw specError(`empty target in ${JSON.stringify(item)}`);
    if (isServerFaultKind(kind as FaultKind)) {
      faults.push(parseServerFault(item, kind as ServerFaultKind, target, atSign === -1 ? undefined : item.slice(atSign + 1)));
      continue;
    }
    const at = atSign === -1 ? undefined : nonNegativeInteger(item.slice(atSign + 1), `the @ of ${JSON.stringify(item)}`);
    if (kind === 'restart-redis' && target !== undefined) throw specError(`restart-redis takes no target, got ${JSON.stringify(target)} (use restart-redis@N for the deployment)`);
    if ((kind === 'delete-partition' || kind === 'corrupt-partition') && at !== undefined) throw specError(`${kind} takes no @ (it fires before the partition's first consumer is deployed)`);
    if (kind === 'restart-redis' && at === 0) throw specError('restart-redis@N counts deployments from 1');
    if (isCheckpointFaultKind(kind as FaultKind) && at === 0) throw specError(`${kind}:TASK@N counts checkpoints from 1`);
    if (kind === 'kill-job-master' && at === 0) throw specError('kill-job-master:TYPE@N counts events from 1');
    if (kind === 'kill-job-master' && target !== undefined && !(JOB_EVENT_TYPES as readonly string[]).includes(target)) {
      throw specError(`kill-job-master: unknown job event type ${JSON.stringify(target)}; expected one of ${JOB_EVENT_TYPES.join(', ')}`);
    }
    faults.push({ kind: kind as FaultKind, ...(target === undefined ? {} : { target }), ...(at === undefined ? {} : { at }) });
  }
  if (faults.length === 0) throw specError('no fault given (only a seed)');
  return { ...(seed === undefined ? {} : { seed }), faults };
}

/** `SERVER-KIND[:TARGET][@POINT][~MS]`; `tail` is what follows the @ (undefined without one). */
function parseServerFault(item: string, kind: ServerFaultKind, target: string | undefined, tail: string | undefined): FaultRequest {
  let point: string | undefined = tail;
  let pauseMs: number | undefined;
  const tilde = (tail ?? item).lastIndexOf('~');
  if (tilde !== -1) {
    if (kind !== 'pause-shuffle-server') throw specError(`${kind} takes no ~MS (only pause-shuffle-server has a duration), in ${JSON.stringify(item)}`);
    if (tail === undefined) throw specError(`~MS goes after @POINT, in ${JSON.stringify(item)}`);
    pauseMs = nonNegativeInteger(tail.slice(tilde + 1), `the ~ of ${JSON.stringify(item)}`);
    if (pauseMs < 1 || pauseMs > 600_000) throw specError(`the pause of ${JSON.stringify(item)} must be 1 to 600000 ms, got ${pauseMs}`);
    point = tail.slice(0, tilde);
  }
  if (point !== undefined && !(SERVER_FAULT_POINTS as readonly string[]).includes(point)) {
    throw specError(`unknown point ${JSON.stringify(point)} in ${JSON.stringify(item)}; expected one of ${SERVER_FAULT_POINTS.join(', ')}`);
  }
  return {
    kind,
    ...(target === undefined ? {} : { target }),
    ...(point === undefined ? {} : { point: point as ServerFaultPoint }),
    ...(pauseMs === undefined ? {} : { pauseMs }),
  };
}

function formatItem(f: FaultRequest): string {
  const where = f.target === undefined ? '' : `:${f.target}`;
  if (isServerFaultKind(f.kind)) return `${f.kind}${where}${f.point === undefined ? '' : `@${f.point}`}${f.pauseMs === undefined ? '' : `~${f.pauseMs}`}`;
  return `${f.kind}${where}${f.at === undefined ? '' : `@${f.at}`}`;
}

/** The spec back as text (with its seed), for reports: `weft run --inject-faults` accepts it as is. */
export function formatFaultSpec(spec: FaultSpec): string {
  const items = spec.faults.map(formatItem);
  return [...(spec.seed === undefined ? [] : [`seed=${spec.seed}`]), ...items].join(',');
}
