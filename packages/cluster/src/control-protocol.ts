import type { FromWorkerMessage, ToWorkerMessage, WorkerInitMessage } from '@weft/engine';
import type { ShuffleLocation } from '@weft/shuffle-api';

/** The HTTP `Upgrade` token of a control connection (`GET /control`, `Connection: Upgrade`). */
export const CONTROL_UPGRADE = 'weft-control/1';

/**
 * The first message on a control connection: a worker's `init` (what job to load, which shuffles to
 * rebuild) with the job's code named by its bundle's sha256 instead of a module URL, the job master's
 * weft version, and `signature`: HMAC-SHA256 with the shared secret over every other field
 * (deployment-signature.ts). An executor runs nothing of a deployment whose signature does not verify.
 */
export interface ExecutorInitMessage extends Omit<WorkerInitMessage, 'jobModuleUrl'> {
  readonly bundleSha256: string;
  readonly weftVersion: string;
  /** When the job master signed it (milliseconds since the epoch): logged, not trusted. */
  readonly issuedAtMs: number;
  readonly signature: string;
}

/** Job master → executor: the worker protocol's messages, `init` as above. */
export type ToExecutorMessage = ExecutorInitMessage | Exclude<ToWorkerMessage, WorkerInitMessage>;

/**
 * Executor → job master: the worker protocol's, where `ready` says how many slots the job got (and,
 * with one, where its worker serves pipelined partitions to other executors, when it does),
 * `shuffle-location` that this changed (the worker was replaced; absent: none for now), and `draining`
 * that the executor stops (SIGTERM): it takes no new work, lets what runs finish, then closes.
 */
export type FromExecutorMessage =
  | Exclude<FromWorkerMessage, { readonly type: 'ready' }>
  | { readonly type: 'ready'; readonly slots: number; readonly shuffleLocation?: ShuffleLocation }
  | { readonly type: 'shuffle-location'; readonly location?: ShuffleLocation }
  | { readonly type: 'draining' };
