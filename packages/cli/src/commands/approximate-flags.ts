import { EngineError } from '@weft/engine';
import { integerFlag, usageError } from '../parse-command-args.js';
import type { CheckpointFlags } from './checkpoint-flags.js';

/** The `weft run` flags of approximate local recovery (issue 16, Flink FLIP-135). */
export const APPROXIMATE_FLAGS = {
  'approximate-recovery': { type: 'boolean' },
  'approximate-reconnect-timeout': { type: 'string' },
} as const;

export type ApproximateFlagValues = {
  readonly 'approximate-recovery'?: boolean | undefined;
  readonly 'approximate-reconnect-timeout'?: string | undefined;
  readonly 'exchange-mode'?: string | undefined;
  readonly executor?: string | undefined;
  readonly workers?: string | undefined;
  readonly cluster?: string | undefined;
  readonly 'pipelined-shuffle'?: string | undefined;
};

export const APPROXIMATE_USAGE = `Approximate recovery (a streaming job; runs in process, on worker processes with --workers N, or on
a cluster's task executors with --cluster, over the network pipelined shuffle):
  --approximate-recovery    every edge PIPELINED_APPROXIMATE (--exchange-mode ALL_EDGES_PIPELINED_APPROXIMATE):
                            a failed task restarts alone (with the tasks that consume it), the others keep
                            running; its upstreams drop what was meant for it meanwhile, its consumers drop
                            the partial record they held. It restores its state from the latest completed
                            checkpoint (with --checkpoint-interval; none yet: it starts empty). Records in
                            flight are lost: refused with --checkpoint-mode exactly-once or an
                            exactly-once sink (sinkTo without deliveryGuarantee 'none'), exit 2.
                            The summary lists each recovery with the records it lost. With --workers N
                            or --cluster (the network pipelined shuffle) a task restarts on a live
                            worker when its own was killed, from the latest checkpoint as in process.
                            Without --restart-strategy it restarts as Flink's checkpointed jobs do:
                            fixed-delay, 2147483647 attempts, 1 s apart
  --approximate-reconnect-timeout MS
                            a restarted task that does not reconnect to its inputs within MS fails again
                            through the ordinary failover path (default 10000)`;

/**
 * The restart strategy of a checkpointed or approximate job given no restart flags: Flink's default once a
 * job checkpoints (fixed-delay, Integer.MAX_VALUE attempts, 1 s apart), not `none`.
 */
export const CHECKPOINTED_DEFAULT_RESTART = { type: 'fixed-delay', attempts: 2_147_483_647, delayMs: 1_000 } as const;

export interface ApproximateFlags {
  readonly reconnectTimeoutMs?: number;
}

/** `WEFT_ERR_APPROXIMATE_REFUSED` naming both flags (exit 2). */
function refused(flag: string, other: string, why: string): EngineError {
  return new EngineError('WEFT_ERR_APPROXIMATE_REFUSED', `${flag} cannot be combined with ${other}: ${why}`, { context: { option: flag, conflictsWith: other } });
}

/**
 * What the approximate flags ask for (undefined: not asked, neither by --approximate-recovery nor by
 * --exchange-mode ALL_EDGES_PIPELINED_APPROXIMATE). Conflicts are refused naming both flags.
 */
export function parseApproximateFlags(values: ApproximateFlagValues, checkpoints: CheckpointFlags | undefined, clusterFromEnv: boolean): ApproximateFlags | undefined {
  const asked = values['approximate-recovery'] === true;
  const mode = values['exchange-mode'];
  const byMode = mode === 'ALL_EDGES_PIPELINED_APPROXIMATE';
  const timeout = integerFlag('run', '--approximate-reconnect-timeout', values['approximate-reconnect-timeout'], 1);
  if (!asked && !byMode) {
    if (timeout !== undefined) throw usageError('run', '--approximate-reconnect-timeout needs --approximate-recovery');
    return undefined;
  }
  const flag = asked ? '--approximate-recovery' : '--exchange-mode ALL_EDGES_PIPELINED_APPROXIMATE';
  if (asked && mode !== undefined && !byMode) throw usageError('run', `--approximate-recovery sets --exchange-mode ALL_EDGES_PIPELINED_APPROXIMATE; it cannot be combined with --exchange-mode ${mode}`);
  if (checkpoints?.mode === 'exactly-once') throw refused(flag, '--checkpoint-mode exactly-once', 'a failed task loses the records in flight, so neither its state nor its sinks can be exactly-once; use --checkpoint-mode at-least-once (the default with it)');
  const workers = values.workers === undefined ? undefined : Number(values.workers);
  if (values['pipelined-shuffle'] === 'memory' && (workers === undefined ? values.executor === 'workers' : workers >= 2)) {
    throw refused(flag, '--pipelined-shuffle memory', 'its tasks, a region each, read partitions produced on other worker processes; use --pipelined-shuffle network (the default with --workers 2 or more)');
  }
  if ((values.cluster !== undefined || clusterFromEnv) && values['pipelined-shuffle'] === 'memory') {
    throw refused(flag, '--pipelined-shuffle memory', 'its tasks, a region each, read partitions produced on other task executors; use --pipelined-shuffle network (the default with --cluster)');
  }
  return timeout === undefined ? {} : { reconnectTimeoutMs: timeout };
}
