import { invalidEngineArgument, type JobEventLog, type JobProgress } from '@weft/engine';
import { type Logger, noopLogger } from '@weft/shuffle-api';
import type { UiExecutor, UiShuffleServer } from '../api/ui-api.js';
import { type AppAssets, appAssets } from './app-assets.js';
import { isLoopbackHost, MIN_UI_TOKEN_BYTES } from './ui-token.js';

/** What a cluster looks like to the UI (`GET /api/cluster`): the CLI lists it from Redis (@weft/cluster, as `weft cluster status`). */
export interface UiClusterSnapshot {
  readonly executors: readonly UiExecutor[];
  readonly shuffleServers: readonly UiShuffleServer[];
}

/** The job master's own live counters, for `/metrics` of `weft run --ui` (the job in this process). */
export interface UiLiveJob {
  readonly jobId: string;
  readonly progress: JobProgress;
}

/** Options of `startUiServer`. Unknown keys are refused. */
export interface UiServerOptions {
  /** The job event log the UI reads (never writes); the caller owns it (the server does not close it). */
  readonly eventLog: JobEventLog;
  /** The interface to listen on; anything but loopback needs `token`. @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** 0: a free port. @defaultValue 0 */
  readonly port?: number;
  /**
   * The read-only token every request must carry (`Authorization: Bearer <token>` or `?token=`), at least
   * MIN_UI_TOKEN_BYTES bytes. Required when `host` is not loopback. @defaultValue none: no check (loopback only)
   */
  readonly token?: string;
  /** Lists the cluster's executors and shuffle servers; absent: `/api/cluster` says `available: false`. @defaultValue none */
  readonly cluster?: () => Promise<UiClusterSnapshot>;
  /** The live counters of a job this process runs, for `/metrics`. @defaultValue none */
  readonly liveJob?: () => UiLiveJob | undefined;
  /** Where the single-page app is (AppAssets). @defaultValue appAssets() — packages/ui/app */
  readonly appAssets?: AppAssets;
  /** How often an event stream polls the log for changes. @defaultValue 1000 */
  readonly streamIntervalMs?: number;
  /** @defaultValue noopLogger */
  readonly logger?: Logger;
  /** The clock that decides 'running' (lease freshness) and running durations. @defaultValue Date.now */
  readonly clock?: () => number;
}

export interface ResolvedUiServerOptions {
  readonly eventLog: JobEventLog;
  readonly host: string;
  readonly port: number;
  readonly token: string | undefined;
  readonly cluster: (() => Promise<UiClusterSnapshot>) | undefined;
  readonly liveJob: (() => UiLiveJob | undefined) | undefined;
  readonly appAssets: AppAssets;
  readonly streamIntervalMs: number;
  readonly logger: Logger;
  readonly clock: () => number;
}

export const DEFAULT_UI_SERVER_OPTIONS = Object.freeze({ host: '127.0.0.1', port: 0, streamIntervalMs: 1000 });

const KNOWN = ['eventLog', 'host', 'port', 'token', 'cluster', 'liveJob', 'appAssets', 'streamIntervalMs', 'logger', 'clock'];

function optionalFunction<T>(name: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') throw invalidEngineArgument(name, 'expected a function');
  return value;
}

/**
 * Checks `options` once: WEFT_ERR_INVALID_ARGUMENT naming the option (`token` when the host is not
 * loopback and there is none — `context.reason: 'token-required'`).
 */
export function resolveUiServerOptions(options: UiServerOptions): ResolvedUiServerOptions {
  if (typeof options !== 'object' || options === null) throw invalidEngineArgument('options', 'expected an object');
  for (const key of Object.keys(options)) if (!KNOWN.includes(key)) throw invalidEngineArgument(key, `unknown option; expected one of ${KNOWN.join(', ')}`);
  const { eventLog } = options;
  if (typeof eventLog?.listRuns !== 'function' || typeof eventLog.readRun !== 'function') throw invalidEngineArgument('eventLog', 'expected a JobEventLog (listRuns, readRun, …)');
  const host = options.host ?? DEFAULT_UI_SERVER_OPTIONS.host;
  if (typeof host !== 'string' || host.trim() === '') throw invalidEngineArgument('host', `expected an interface name or address, got ${JSON.stringify(host)}`);
  const port = options.port ?? DEFAULT_UI_SERVER_OPTIONS.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw invalidEngineArgument('port', `expected an integer in [0, 65535], got ${String(port)}`);
  const token = options.token;
  if (token !== undefined && (typeof token !== 'string' || Buffer.byteLength(token) < MIN_UI_TOKEN_BYTES || /\s/.test(token))) {
    throw invalidEngineArgument('token', `expected at least ${MIN_UI_TOKEN_BYTES} bytes without whitespace`);
  }
  if (token === undefined && !isLoopbackHost(host)) {
    throw invalidEngineArgument('token', `the UI listens on ${host}, beyond loopback: a token is required (anyone who reaches the port could read every job)`, { reason: 'token-required' });
  }
  const streamIntervalMs = options.streamIntervalMs ?? DEFAULT_UI_SERVER_OPTIONS.streamIntervalMs;
  if (!Number.isInteger(streamIntervalMs) || streamIntervalMs < 1) throw invalidEngineArgument('streamIntervalMs', `expected an integer >= 1, got ${String(streamIntervalMs)}`);
  return {
    eventLog,
    host,
    port,
    token,
    cluster: optionalFunction('cluster', options.cluster),
    liveJob: optionalFunction('liveJob', options.liveJob),
    appAssets: options.appAssets ?? appAssets(),
    streamIntervalMs,
    logger: options.logger ?? noopLogger,
    clock: optionalFunction('clock', options.clock) ?? Date.now,
  };
}
