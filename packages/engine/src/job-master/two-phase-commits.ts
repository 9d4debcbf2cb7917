import type { TwoPhaseCommitSinkFactory } from '../api/two-phase-commit-sink.js';
import { EngineError } from '../errors/engine-error.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { SinkOutput } from '../operators/stream-operator.js';
import type { JobCompletionOptions } from './job-completion.js';

type TwoPhaseOutput = Extract<SinkOutput, { kind: 'two-phase-commit' }>;

export interface TwoPhaseCommitsRequest {
  readonly jobId: string;
  readonly plan: JobPlan;
  readonly cwd: string;
  readonly fileSystems: readonly ExternalFileSystem[];
  /** The finished attempts' sink outputs (others are ignored). */
  readonly outputs: readonly SinkOutput[];
}

/**
 * The end of input of the job's two-phase-commit sinks (`sinkTo`): each finished attempt pre-committed its
 * last transaction; `commitTwoPhaseSinks` commits them, sink by sink in subtask order, once the whole job
 * succeeded (the final commit — the batch sinks' publish at the job's end); `abortTwoPhaseSinks` aborts
 * them when it failed. Commit is idempotent (the contract), so a job master that fails half way and a
 * resumed run committing again publish each transaction once. Each call makes its own sink instance
 * (attempt -1: the job master's).
 */
export async function commitTwoPhaseSinks(request: TwoPhaseCommitsRequest): Promise<void> {
  await forEachHandle(request, 'commit');
}

/** Aborts the finished attempts' pre-committed transactions (a failed job); every one is tried, the first failure rethrown. */
export async function abortTwoPhaseSinks(request: TwoPhaseCommitsRequest): Promise<void> {
  await forEachHandle(request, 'abort');
}

async function forEachHandle(request: TwoPhaseCommitsRequest, action: 'commit' | 'abort'): Promise<void> {
  const sinkOf = (o: TwoPhaseOutput): string => o.uid ?? o.sink;
  const outputs = request.outputs.filter((o): o is TwoPhaseOutput => o.kind === 'two-phase-commit').sort((a, b) => (sinkOf(a) === sinkOf(b) ? a.subtask - b.subtask : sinkOf(a) < sinkOf(b) ? -1 : 1));
  let first: unknown;
  for (const output of outputs) {
    if (output.handles.length === 0) continue;
    // by uid: two sinks may share a name (two unnamed sinkTo are both "sinkTo"); by name for an output logged without one
    const node = request.plan.logical.nodes.find((n) => n.spec.kind === 'two-phase-commit-sink' && (output.uid === undefined ? n.name === output.sink : n.uid === output.uid));
    if (node === undefined || node.spec.kind !== 'two-phase-commit-sink') throw sinkFailed(output.sink, action, 'the plan has no such two-phase-commit sink');
    const create: TwoPhaseCommitSinkFactory<unknown> = node.spec.create;
    const sink = create(Object.freeze({ jobId: request.jobId, operatorName: output.sink, subtask: output.subtask, parallelism: output.parallelism, attempt: -1, cwd: request.cwd, fileSystems: request.fileSystems }));
    try {
      for (const handle of output.handles) {
        try {
          await (action === 'commit' ? sink.commit(handle) : sink.abort(handle));
        } catch (error) {
          if (action === 'commit') throw sinkFailed(output.sink, action, `subtask ${output.subtask}: ${(error as Error).message}`, error);
          first ??= sinkFailed(output.sink, action, `subtask ${output.subtask}: ${(error as Error).message}`, error);
        }
      }
    } finally {
      await sink.close?.();
    }
  }
  if (first !== undefined) throw first;
}

function sinkFailed(sink: string, action: string, problem: string, cause?: unknown): EngineError {
  return new EngineError('WEFT_ERR_SINK_FAILED', `cannot ${action} the transactions of sink ${JSON.stringify(sink)}: ${problem}`, { context: { operator: sink }, ...(cause === undefined ? {} : { cause }) });
}

/** The final commit and abort of the plan's two-phase-commit sinks (JobCompletion's), or undefined when it has none. */
export function twoPhaseSinksOf(request: Omit<TwoPhaseCommitsRequest, 'outputs'>): JobCompletionOptions['twoPhaseSinks'] {
  if (!request.plan.logical.nodes.some((n) => n.spec.kind === 'two-phase-commit-sink')) return undefined;
  return {
    commit: (outputs) => commitTwoPhaseSinks({ ...request, outputs }),
    abort: (outputs) => abortTwoPhaseSinks({ ...request, outputs }),
  };
}
