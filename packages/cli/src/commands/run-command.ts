import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type AdaptiveBatchOptions, DEFAULT_APPROXIMATE_RECONNECT_TIMEOUT_MS, DEFAULT_CHECKPOINT_RETENTION, discardsCheckpointsAtEnd, EngineError, resolveAdaptiveBatchOptions, isEngineError, EXCHANGE_MODES, type ExternalFileSystem, type JobEventLog, type ExchangeMode, isExchangeMode, type JobResult, loadJob, type PrestartedWorkers, prestartWorkers, type RestartStrategyOptions, runJob } from '@weft/engine';
import type { ShuffleServiceFactory } from '@weft/shuffle-api';
import type { ShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import type { BlobStore } from '@weft/shuffle-remote';
import { type CliIo, type Command, ExitCode } from '../command.js';
import { DEFAULT_STANDBY_TAKEOVER_MS, standBy } from './standby.js';
import { integerFlag, parseCommandArgs, usageError } from '../parse-command-args.js';
import type { FaultHarness } from '../faults/fault-harness.js';
import { FAULT_SPEC_GRAMMAR, type FaultSpec, parseFaultSpec } from '../faults/fault-spec.js';
import { formatFaultReport } from './fault-report.js';
import { describeError, formatFailoverLine, formatFailure, formatProgressLine, formatReplicationLine, formatRunSummary, runSummaryJson } from './run-report.js';
import { parseRecoveryFlags, RECOVERY_FLAGS, RECOVERY_USAGE } from './run-options.js';
import { MEMORY_FLAGS, MEMORY_USAGE, parseMemoryFlags } from './memory-flags.js';
import type { ClusterExecutorProvider } from '@weft/cluster';
import { readSecret } from '../read-secret.js';
import { extractRunUiFlags, newRunJobId, RUN_UI_USAGE, type RunUi, startRunUi } from './run-ui.js';
import { stderrLogger } from '../stderr-logger.js';
import { bundleJobModule } from './bundle-job-module.js';
import { ADAPTIVE_FLAGS, ADAPTIVE_USAGE, parseAdaptiveFlags } from './adaptive-flags.js';
import { CHECKPOINT_FLAGS, CHECKPOINT_USAGE, parseCheckpointFlags } from './checkpoint-flags.js';
import { APPROXIMATE_FLAGS, CHECKPOINTED_DEFAULT_RESTART, APPROXIMATE_USAGE, parseApproximateFlags } from './approximate-flags.js';
import { BlobCheckpointStorage } from './blob-checkpoint-storage.js';
import { defaultMetaUrl, defaultStoreUrl } from './default-stores.js';

/** The most copies --shuffle-replicas takes (the client's `replicas` limit). */
const MAX_SHUFFLE_REPLICAS = 8;

/** The restart strategy under --inject-faults when none is given. */
const FAULT_RESTART_ATTEMPTS = 10;
const FAULT_RESTART_DELAY_MS = 100;

const USAGE = `Usage: weft run <job module> [--parallelism N] [--store URL] [--meta URL] [--shuffle-servers URL [--shuffle-replicas N]] [--executor inprocess|workers]
                [--cluster URL [--cluster-startup-timeout MS] [--secret-file PATH]]
                [--parallelism auto [--min-parallelism N] [--max-parallelism N] [--data-volume-per-task SIZE]]
                [--workers N] [--slots N] [--pipelined-shuffle memory|network] [--buffer-timeout MS] [--exchange-mode MODE] [--restart-strategy S ...]
                [--failover-strategy F] [--task-memory SIZE] [--spill-dir PATH]
                [--checkpoint-interval D [--checkpoint-mode M] [--from-checkpoint latest|ID] ...]
                [--inject-faults SPEC] [--job-id ID] [--ui [PORT]] [--plan-only] [--json] [-- job args...]

Runs a batch job: a .ts or .js module whose default export is defineJob((ctx) => ...). Its pipelined
regions are scheduled as their blocking inputs finish; pipelined exchanges go through the in-memory
shuffle inside one executor, or — on two or more workers — through the network shuffle, a region's
tasks spread over the workers; blocking ones through the persisted shuffle named by --store and --meta.

Options:
  --parallelism N           default parallelism of the job's operators (default: the number of cores);
                            auto: decided at run time from the data (see Adaptive parallelism below)
  --store URL               where blocking partitions are stored: file:///abs/dir or s3://bucket/prefix
                            (default: $WEFT_STORE, else ./.weft/shuffle)
  --meta URL                partition metadata: sqlite:///abs/file.db, redis://host:port/db or
                            redis+sentinel://host:port[,host:port…]/name/db (writes wait for a replica)
                            (default: $WEFT_META, else ./.weft/shuffle-meta.db)
  --shuffle-servers URL     push blocking partitions to the \`weft shuffle-server\` pool registered in this
                            Redis (redis://host:port/db or redis+sentinel://…; default: $WEFT_SHUFFLE_SERVERS) instead of --store/--meta;
                            job tokens are signed with $WEFT_SHUFFLE_SECRET. --store s3://… then names the
                            servers' S3 tier, read when a server is gone.
  --shuffle-replicas N      with --shuffle-servers: push every blocking partition to N servers (default 1,
                            at most ${MAX_SHUFFLE_REPLICAS}), on different hosts where the pool has them; a reader uses any copy,
                            so one server's death re-runs no task. More than the live servers: a warning,
                            and as many as there are (the summary says how many were used).
  --executor KIND           workers (default): a pool of worker processes; inprocess: this process only
  --cluster URL             run on the task executors registered in this Redis (redis://host:port/db;
                            default: $WEFT_CLUSTER) instead of local processes (docs/cluster.md). The
                            job's code travels with it (bundled, stored in that Redis by sha256);
                            deployments are signed with $WEFT_SHUFFLE_SECRET (or --secret-file).
                            Needs a blocking shuffle every host reaches: --store s3://… with
                            --meta redis://…, or --shuffle-servers
  --cluster-startup-timeout MS
                            with --cluster: how long to wait for a first executor (default 30000);
                            none by then: the job fails, exit 1
  --secret-file PATH        with --cluster: file holding the shared secret
  --workers N               worker processes (default: the number of cores)
  --slots N                 regions one executor runs at once (default: 1 per worker; with
                            --executor inprocess, the number of cores); a region spread over
                            workers takes one slot on each
  --pipelined-shuffle S     memory: each pipelined region runs whole in one executor; network: worker
                            processes serve pipelined partitions to each other over TCP
                            (@weft/shuffle-network, on 127.0.0.1) and a region's tasks are spread over
                            them (default: network with --workers 2 or more, else memory; with
                            --cluster, network spreads regions over executors holding one slot)
  --buffer-timeout MS       a pipelined exchange's partly filled buffer goes to its consumer once it is
                            this old (Flink's execution.buffer-timeout; the shuffles' flushTimeoutMs);
                            0: every record at once (default 100)
  --exchange-mode MODE      ${EXCHANGE_MODES.join(' | ')}
                            (default: the job's own, else ALL_EDGES_BLOCKING)
  --no-release-during-job   keep every blocking partition until the job ends (default: a result's
                            partitions are released as soon as every region reading them finished)
  --job-id ID               name the run (default: a fresh random id). Every run's events go to the job
                            event log in the --meta store (with --shuffle-servers: the servers' Redis);
                            when it holds an unfinished run of ID, the same command resumes it: tasks
                            that finished and whose partitions still exist are not run again. A
                            finished ID, another job module or other job arguments are refused (exit 2)
  --standby                 with --job-id: a standby job master — wait while another run of ID holds its
                            lease (renewed every second), take the job over (resume it) once the lease
                            goes unrenewed for --standby-takeover-ms MS (default ${DEFAULT_STANDBY_TAKEOVER_MS}); a run that ends
                            meanwhile: nothing to do (exit 0 if it succeeded, else 1)
${RUN_UI_USAGE}
  --json                    print a machine-readable summary on stdout (with every failover)
  --plan-only               print the job's topology (docs/DESIGN.md contract 1: what \`weft plan\` reads;
                            one line with --json) and exit without running it
  -h, --help                show this help

${RECOVERY_USAGE}

${MEMORY_USAGE}

${ADAPTIVE_USAGE}

${CHECKPOINT_USAGE}

${APPROXIMATE_USAGE}

Every failover is reported: the task that failed and why (error code and message), the tasks restarted
(exactly what \`weft plan <topology> --fail <task> [--lost <partition>]...\` predicts for the job's
topology) and the work that saved against restarting every task.

Fault injection:
  --inject-faults SPEC      damage the job on purpose, to watch it recover. Without any restart flag,
                            the restart strategy is then fixed-delay with ${FAULT_RESTART_ATTEMPTS} attempts, ${FAULT_RESTART_DELAY_MS} ms apart.
  ${FAULT_SPEC_GRAMMAR.replace(/\n/g, '\n  ')}

Arguments after -- go to the job (ctx.args); the examples take --input <path> and --output <path>.
A job's inputs and outputs may be s3://bucket/key URLs as well as paths: an input object (or the objects
under a prefix) is split by byte ranges and read with ranged GETs; an output is published all or
nothing when the job succeeds (the key never exists half-written).
S3 endpoint and credentials (for --store s3://… and s3:// inputs and outputs alike) come from
AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.

Exit codes: 0 the job succeeded; 1 the job failed; 2 bad usage, missing module, invalid job or job
arguments, or an input the job cannot read.
`;

function isShuffleConfigError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === 'SHF_ERR_INVALID_CONFIG' || code === 'SHF_ERR_INVALID_ARGUMENT';
}

/** A documented shuffle error that is not about the command line (a backend refused the job). */
function isShuffleFailure(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' && code.startsWith('SHF_ERR_') && !isShuffleConfigError(error);
}

// The shuffle implementations are imported when a job runs (after its workers were forked, so their
// start-up overlaps this import), not when `weft` starts.
const PIPELINED_MODULE = '@weft/shuffle-memory';
const NETWORK_MODULE = '@weft/shuffle-network';
const BLOCKING_MODULE = '@weft/shuffle-remote';
const SERVER_MODULE = '@weft/shuffle-remote/client';

/** The pipelined shuffle: in memory (a region whole in one executor), or over TCP between workers. */
async function pipelinedShuffle(kind: 'memory' | 'network', reconnectTimeoutMs: number | undefined, flushTimeoutMs: number | undefined): Promise<ShuffleServiceFactory> {
  // --buffer-timeout: how old a partly filled buffer gets before it is sent
  const flush = flushTimeoutMs === undefined ? {} : { flushTimeoutMs };
  if (kind === 'network') {
    const { createNetworkShuffleServiceFactory } = await import('@weft/shuffle-network');
    // an approximate job: a channel whose producer went away waits this long for its new attempt (--approximate-reconnect-timeout)
    return createNetworkShuffleServiceFactory({ ...flush, ...(reconnectTimeoutMs === undefined ? {} : { reconnectTimeoutMs }) });
  }
  const { createMemoryShuffleServiceFactory } = await import('@weft/shuffle-memory');
  return createMemoryShuffleServiceFactory(flush);
}

/** A setting and where it came from, so an error names what the user wrote: `--store`, or `WEFT_STORE`. */
interface Setting {
  readonly value: string;
  readonly source: string;
}

/** The flag's value, else the environment variable's, else the default — with its source. */
function setting(flag: string, value: string | undefined, variable: string, env: CliIo['env'], fallback: string): Setting {
  if (value !== undefined) return { value, source: flag };
  const fromEnv = env[variable];
  if (fromEnv !== undefined) return { value: fromEnv, source: variable };
  return { value: fallback, source: `${flag} (default ${fallback})` };
}

/** The setting a shuffle config error is about, by the prefix of its `context.setting`, if any. */
function settingOf(error: unknown, settings: Readonly<Record<string, Setting | undefined>>): string | undefined {
  const name = String((error as { context?: { setting?: unknown } }).context?.setting ?? '');
  for (const [prefix, s] of Object.entries(settings)) if (s !== undefined && name.startsWith(prefix)) return s.source;
  return name === '' ? undefined : `the shuffle setting ${name}`;
}

/** The blocking shuffle from --store / --meta (or WEFT_STORE / WEFT_META); defaults under ./.weft/. */
async function blockingShuffle(store: Setting, meta: Setting): Promise<ShuffleServiceFactory> {
  const { createRemoteShuffleServiceFactory } = await import('@weft/shuffle-remote');
  try {
    return createRemoteShuffleServiceFactory({ store: store.value, meta: meta.value });
  } catch (error) {
    if (!isShuffleConfigError(error)) throw error;
    throw usageError('run', `${settingOf(error, { meta, store }) ?? 'the blocking shuffle'}: ${(error as Error).message}`, error);
  }
}

/**
 * The blocking shuffle of a `weft shuffle-server` pool found in the Redis registry at `registry`; `tier`
 * is the servers' S3 tier, if they have one.
 */
async function serverShuffle(registry: Setting, tier: Setting | undefined, replicas: number | undefined): Promise<ShuffleServerServiceFactory> {
  const { createShuffleServerServiceFactory } = await import('@weft/shuffle-remote/client');
  try {
    return createShuffleServerServiceFactory({ redis: registry.value, ...(tier === undefined ? {} : { tier: tier.value }), ...(replicas === undefined ? {} : { replicas }) });
  } catch (error) {
    if (!isShuffleConfigError(error)) throw error;
    const secret = { value: '', source: 'WEFT_SHUFFLE_SECRET' };
    throw usageError('run', `${settingOf(error, { tier, secret, redis: registry }) ?? registry.source}: ${(error as Error).message}`, error);
  }
}

/**
 * Where `s3://bucket/key` job inputs and outputs live: the S3 file system, with the same endpoint and
 * credentials as an S3 store (the AWS variables, read when first used; worker processes read their own).
 */
async function s3FileSystem(): Promise<ExternalFileSystem> {
  const { createS3FileSystem } = await import('@weft/shuffle-remote');
  return createS3FileSystem();
}

/** The job event log in the store named by `where` (--meta, or the shuffle servers' Redis). */
async function openEventLog(where: Setting): Promise<JobEventLog> {
  const { createJobEventLog } = await import('@weft/job-store');
  try {
    return await createJobEventLog(where.value, { setting: where.source });
  } catch (error) {
    if (!isShuffleConfigError(error)) throw error;
    throw usageError('run', `${where.source}: ${(error as Error).message}`, error);
  }
}

/** How the job module is loaded in this process and its workers (`--json`'s `cli.jobModule`). */
let jobModuleLoad: 'esbuild-bundle' | 'tsx' | 'as-is' = 'as-is';

/**
 * A TypeScript job module in a process started without tsx (the built CLI): bundled by esbuild into
 * plain JavaScript that this process and its workers import instead (bundleJobModule); if that fails,
 * tsx's loader registered here, as the workers get it lazily (WEFT_WORKER_LOADER).
 */
async function ensureTypeScriptLoader(jobPath: string): Promise<void> {
  jobModuleLoad = 'as-is';
  if (!isTypeScript(jobPath) || process.execArgv.some((a) => a.includes('tsx'))) return;
  if (await bundleJobModule(jobPath)) {
    jobModuleLoad = 'esbuild-bundle';
    return;
  }
  jobModuleLoad = 'tsx';
  const { register } = await import('tsx/esm/api');
  register();
}

/**
 * Node options for workers: those of this process. A TypeScript job needs a loader: from the sources the
 * workers inherit `--import tsx` (this process has it); from built code they import the job's esbuild
 * bundle (ensureTypeScriptLoader), or, if there is none, register tsx lazily, after the engine's modules
 * are loaded (WEFT_WORKER_LOADER, set in this process's environment so replacement workers get it too) —
 * `--import tsx` would put every worker module through its hooks (measured in bench/README.md).
 */
function workerExecArgv(jobPath: string): string[] {
  const argv = process.execArgv.filter((a) => !a.startsWith('--test') && !a.startsWith('--inspect'));
  const hasTsx = argv.some((a) => a.includes('tsx'));
  if (isTypeScript(jobPath) && !hasTsx && jobModuleLoad === 'tsx') process.env['WEFT_WORKER_LOADER'] ??= import.meta.resolve('tsx/esm');
  return argv;
}

function isTypeScript(jobPath: string): boolean {
  return /\.(c|m)?tsx?$/.test(jobPath);
}

/**
 * How this CLI process runs, for `--json` (`"cli"`): from the built code (`dist/`, plain node) or the
 * TypeScript sources (through tsx: `tsx: "preloaded"`), and how the job module is loaded — as it is
 * (JavaScript, or through the preloaded tsx), as an esbuild bundle, or through tsx registered lazily.
 */
function cliRuntime(): { readonly code: 'built' | 'source'; readonly tsx: 'preloaded' | 'none'; readonly jobModule: 'esbuild-bundle' | 'tsx' | 'as-is' } {
  const code = import.meta.url.endsWith('.ts') ? 'source' : 'built';
  const preloaded = process.execArgv.some((a) => a.includes('tsx'));
  return { code, tsx: preloaded ? 'preloaded' : 'none', jobModule: jobModuleLoad };
}

/** `--plan-only`: the job's topology (contract 1) — pretty for a person, one line with --json. */
async function printPlan(jobPath: string, request: { args: string[]; parallelism: number | undefined; adaptive: AdaptiveBatchOptions | undefined; exchangeMode: ExchangeMode | undefined; cwd: string; json: boolean }, io: CliIo): Promise<number> {
  // --parallelism auto: sources sized from their inputs (which must exist then), undecided vertices at their reserved size
  const adaptive = request.adaptive === undefined ? undefined : { options: resolveAdaptiveBatchOptions(request.adaptive) };
  const loaded = await loadJob({
    ...(adaptive === undefined ? {} : { adaptive }),
    job: jobPath,
    args: request.args,
    parallelism: request.parallelism ?? availableParallelism(),
    cwd: request.cwd,
    // a plan can be shown before its input exists
    checkInputs: false,
    ...(request.exchangeMode === undefined ? {} : { exchangeMode: request.exchangeMode }),
  });
  io.stdout.write(request.json ? `${JSON.stringify(loaded.plan.topology)}\n` : `${JSON.stringify(loaded.plan.topology, null, 2)}\n`);
  return ExitCode.OK;
}

/**
 * `--cluster` (or $WEFT_CLUSTER): the cluster's task executors as the job's executor provider. The
 * blocking shuffle must be one every host reaches (S3 + Redis, or a shuffle-server pool).
 */
async function clusterProvider(request: {
  values: { cluster?: string | undefined; 'cluster-startup-timeout'?: string | undefined; 'secret-file'?: string | undefined; executor?: string | undefined; workers?: string | undefined };
  servers: Setting | undefined;
  store: Setting;
  meta: Setting;
  io: CliIo;
}): Promise<ClusterExecutorProvider | undefined> {
  const { values, servers, store, meta, io } = request;
  const url = values.cluster ?? (io.env['WEFT_CLUSTER'] === '' ? undefined : io.env['WEFT_CLUSTER']);
  const timeout = integerFlag('run', '--cluster-startup-timeout', values['cluster-startup-timeout'], 1);
  if (url === undefined) {
    if (timeout !== undefined) throw usageError('run', '--cluster-startup-timeout needs --cluster');
    return undefined;
  }
  if (values.executor !== undefined || values.workers !== undefined) throw usageError('run', `--cluster cannot be combined with ${values.executor !== undefined ? '--executor' : '--workers'}: the cluster's task executors run the job`);
  if (servers === undefined && !(store.value.startsWith('s3://') && meta.value.startsWith('redis'))) {
    throw usageError('run', `--cluster needs a blocking shuffle every host reaches: --store s3://… with --meta redis://…, or --shuffle-servers (got ${store.source} ${store.value.startsWith('s3://') ? 's3' : 'local'}, ${meta.source} ${meta.value.split(':')[0]})`);
  }
  const secret = await readSecret('run', values['secret-file'], io);
  const { ClusterExecutorProvider } = await import('@weft/cluster');
  try {
    return new ClusterExecutorProvider({ cluster: url, secret, ...(timeout === undefined ? {} : { startupTimeoutMs: timeout }), logger: stderrLogger(io, false) });
  } catch (error) {
    if (isShuffleConfigError(error) || isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT')) throw usageError('run', `--cluster: ${(error as Error).message}`, error);
    throw error;
  }
}

export const runCommand: Command = {
  name: 'run',
  summary: 'run a batch job module on worker processes, with live progress and a summary',
  usage: USAGE,
  async run(allArgs, io) {
    const { args, ui: uiRequest } = extractRunUiFlags(allArgs);
    const { values, positionals, rest } = parseCommandArgs('run', args, {
      parallelism: { type: 'string' },
      ...ADAPTIVE_FLAGS,
      store: { type: 'string' },
      meta: { type: 'string' },
      'shuffle-servers': { type: 'string' },
      'shuffle-replicas': { type: 'string' },
      executor: { type: 'string' },
      workers: { type: 'string' },
      slots: { type: 'string' },
      'pipelined-shuffle': { type: 'string' },
      'buffer-timeout': { type: 'string' },
      'exchange-mode': { type: 'string' },
      ...RECOVERY_FLAGS,
      ...MEMORY_FLAGS,
      ...CHECKPOINT_FLAGS,
      ...APPROXIMATE_FLAGS,
      'inject-faults': { type: 'string' },
      'plan-only': { type: 'boolean' },
      'no-release-during-job': { type: 'boolean' },
      json: { type: 'boolean' },
      'job-id': { type: 'string' },
      standby: { type: 'boolean' },
      'standby-takeover-ms': { type: 'string' },
      cluster: { type: 'string' },
      'cluster-startup-timeout': { type: 'string' },
      'secret-file': { type: 'string' },
    });
    if (positionals.length === 0) throw usageError('run', 'missing <job module>');
    if (positionals.length > 1) throw usageError('run', `expected one job module, got ${positionals.length}: ${positionals.join(' ')} (job arguments go after --)`);
    const adaptive = parseAdaptiveFlags('run', values);
    const parallelism = adaptive === undefined ? integerFlag('run', '--parallelism', values.parallelism, 1) : undefined;
    const workers = integerFlag('run', '--workers', values.workers, 1);
    const slots = integerFlag('run', '--slots', values.slots, 1);
    const bufferTimeoutMs = integerFlag('run', '--buffer-timeout', values['buffer-timeout'], 0);
    const replicas = integerFlag('run', '--shuffle-replicas', values['shuffle-replicas'], 1);
    if (replicas !== undefined && replicas > MAX_SHUFFLE_REPLICAS) throw usageError('run', `--shuffle-replicas must be at most ${MAX_SHUFFLE_REPLICAS}, got ${replicas}`);
    const checkpointFlags = parseCheckpointFlags(values);
    const onCluster = values.cluster !== undefined || io.env['WEFT_CLUSTER'] !== undefined;
    const approximate = parseApproximateFlags(values, checkpointFlags, onCluster);
    // a checkpointed or approximate job runs in process unless --workers (or --cluster) is given
    const executor = values.executor ?? ((checkpointFlags === undefined && approximate === undefined) || workers !== undefined || onCluster ? 'workers' : 'inprocess');
    if (executor !== 'workers' && executor !== 'inprocess') throw usageError('run', `--executor must be inprocess or workers, got ${JSON.stringify(executor)}`);
    if (checkpointFlags !== undefined && adaptive !== undefined) throw usageError('run', '--checkpoint-interval cannot be combined with --parallelism auto');
    // an approximate job on a cluster: its tasks, a region each, read each other's partitions across executors
    const pipelinedKind = values['pipelined-shuffle'] ?? ((executor === 'workers' && !onCluster && (workers ?? availableParallelism()) >= 2) || (onCluster && approximate !== undefined) ? 'network' : 'memory');
    if (pipelinedKind !== 'memory' && pipelinedKind !== 'network') throw usageError('run', `--pipelined-shuffle must be memory or network, got ${JSON.stringify(pipelinedKind)}`);
    if (pipelinedKind === 'network' && executor === 'inprocess') throw usageError('run', '--pipelined-shuffle network needs worker processes: it is what spreads a region over them (drop --executor inprocess)');
    const exchangeMode = approximate === undefined ? values['exchange-mode'] : 'ALL_EDGES_PIPELINED_APPROXIMATE';
    if (exchangeMode !== undefined && !isExchangeMode(exchangeMode)) throw usageError('run', `--exchange-mode must be one of ${EXCHANGE_MODES.join(', ')}, got ${JSON.stringify(exchangeMode)}`);
    const faultSpec: FaultSpec | undefined = values['inject-faults'] === undefined ? undefined : parseFaultSpec(values['inject-faults']);
    const faultRestart: RestartStrategyOptions | undefined = faultSpec === undefined ? undefined : { type: 'fixed-delay', attempts: FAULT_RESTART_ATTEMPTS, delayMs: FAULT_RESTART_DELAY_MS };
    // a checkpointed job restores from its checkpoints, an approximate one restarts a failed task: without
    // restart flags, Flink's default for a checkpointed job (fixed-delay, Integer.MAX_VALUE attempts, 1 s apart), not `none`
    const recovery = parseRecoveryFlags(values, faultRestart ?? (approximate === undefined && checkpointFlags === undefined ? undefined : CHECKPOINTED_DEFAULT_RESTART));
    const memory = parseMemoryFlags(values);

    const jobPath = resolve(io.cwd, positionals[0] as string);
    try {
      const info = await stat(jobPath);
      if (!info.isFile()) throw new Error('it is not a file');
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
      throw new EngineError('WEFT_ERR_INPUT_UNREADABLE', `cannot read job module ${positionals[0]}: ${reason}`, { context: { path: jobPath }, cause: error });
    }
    await ensureTypeScriptLoader(jobPath);
    if (values['plan-only'] === true) {
      return printPlan(jobPath, { args: rest, parallelism, adaptive, exchangeMode: exchangeMode as ExchangeMode | undefined, cwd: io.cwd, json: values.json === true }, io);
    }
    const servers: Setting | undefined =
      values['shuffle-servers'] !== undefined
        ? { value: values['shuffle-servers'], source: '--shuffle-servers' }
        : io.env['WEFT_SHUFFLE_SERVERS'] !== undefined
          ? { value: io.env['WEFT_SHUFFLE_SERVERS'], source: 'WEFT_SHUFFLE_SERVERS' }
          : undefined;
    if (servers === undefined && replicas !== undefined) throw usageError('run', '--shuffle-replicas needs --shuffle-servers (or WEFT_SHUFFLE_SERVERS): replicas are copies on shuffle servers');
    if (servers !== undefined && values.meta !== undefined) throw usageError('run', `--meta cannot be combined with ${servers.source}: the servers keep the metadata`);
    const store = setting('--store', values.store, 'WEFT_STORE', io.env, defaultStoreUrl(io.cwd));
    const meta = setting('--meta', values.meta, 'WEFT_META', io.env, defaultMetaUrl(io.cwd));
    const blockingModule = servers === undefined ? BLOCKING_MODULE : SERVER_MODULE;
    const takeoverMs = integerFlag('run', '--standby-takeover-ms', values['standby-takeover-ms'], 1);
    if (values.standby !== true && takeoverMs !== undefined) throw usageError('run', '--standby-takeover-ms needs --standby');
    if (values.standby === true) {
      // before any worker or executor is taken: a standby may wait for hours
      if (values['job-id'] === undefined) throw usageError('run', '--standby needs --job-id: a standby takes over one named job');
      const ended = await standBy({ openEventLog: () => openEventLog(servers ?? meta), jobId: values['job-id'], takeoverMs: takeoverMs ?? DEFAULT_STANDBY_TAKEOVER_MS, io });
      if (ended !== undefined) return ended;
    }
    const execArgv = workerExecArgv(jobPath);
    const cluster = await clusterProvider({ values, servers, store, meta, io });
    let prestarted: PrestartedWorkers | undefined;
    if (executor === 'workers' && cluster === undefined) {
      prestarted = prestartWorkers({ workers: workers ?? availableParallelism(), cwd: io.cwd, execArgv, preload: [pathToFileURL(jobPath).href, pipelinedKind === 'network' ? NETWORK_MODULE : PIPELINED_MODULE, blockingModule] });
    }
    let blocking: ShuffleServiceFactory;
    let serverFactory: ShuffleServerServiceFactory | undefined;
    let pipelined: ShuffleServiceFactory;
    let harness: FaultHarness | undefined;
    try {
      const tier = values.store !== undefined || io.env['WEFT_STORE'] !== undefined ? store : undefined;
      [blocking, pipelined] = await Promise.all([
        servers === undefined ? blockingShuffle(store, meta) : serverShuffle(servers, tier, replicas).then((f) => (serverFactory = f)),
        pipelinedShuffle(pipelinedKind, approximate === undefined ? undefined : (approximate.reconnectTimeoutMs ?? DEFAULT_APPROXIMATE_RECONNECT_TIMEOUT_MS), bufferTimeoutMs),
      ]);
      if (faultSpec !== undefined) {
        // Loaded only when faults are asked for: it imports the persisted shuffle's stores.
        const { createFaultHarness } = await import('../faults/create-fault-harness.js');
        harness = createFaultHarness({ spec: faultSpec, blocking });
        io.stderr.write(`weft run: injecting faults ${harness.replaySpec} (replay with --inject-faults '${harness.replaySpec}')\n`);
      }
    } catch (error) {
      await prestarted?.close();
      throw error;
    }

    // with --ui the id is chosen here, so the UI's /metrics names the job from its first scrape; a
    // checkpointed run names it so a cancelled run can be restored
    const jobId = values['job-id'] ?? (uiRequest === undefined && checkpointFlags === undefined ? undefined : newRunJobId());
    if (jobId !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(jobId)) throw usageError('run', `--job-id must be 1 to 128 letters, digits, '.', '_' or '-' (starting with a letter or digit), got ${JSON.stringify(jobId)}`);
    // the job event log lives in the metadata store the run uses: --meta, or the servers' Redis
    let eventLog: JobEventLog;
    let fileSystems: ExternalFileSystem[];
    try {
      fileSystems = [await s3FileSystem()];
      eventLog = await openEventLog(servers ?? meta);
      if (harness !== undefined) eventLog = harness.wrapEventLog(eventLog);
    } catch (error) {
      await prestarted?.close();
      await harness?.close();
      throw error;
    }
    let checkpointStore: BlobStore | undefined;
    if (checkpointFlags !== undefined) {
      try {
        const { createBlobStore, parseStoreUrl } = await import('@weft/shuffle-remote');
        checkpointStore = createBlobStore(parseStoreUrl(store.value, store.source));
        await checkpointStore.start();
      } catch (error) {
        await checkpointStore?.close().catch(() => {});
        await prestarted?.close();
        await harness?.close();
        await eventLog.close().catch(() => {});
        if (isShuffleConfigError(error)) throw usageError('run', `${store.source}: ${(error as Error).message}`, error);
        throw error;
      }
    }
    let ui: RunUi | undefined;
    if (uiRequest !== undefined) {
      try {
        ui = await startRunUi({ ui: uiRequest, eventLog, jobId: jobId as string, io });
      } catch (error) {
        await prestarted?.close();
        await harness?.close();
        await checkpointStore?.close().catch(() => {});
        await eventLog.close().catch(() => {});
        throw error;
      }
    }
    const tty = (io.stderr as { isTTY?: boolean }).isTTY === true;
    let shown = false;
    let result: JobResult;
    // a streaming job runs until cancelled: SIGINT / SIGTERM cancel it (its checkpoints stay for --from-checkpoint, unless its retention removes them)
    const cancel = checkpointFlags === undefined ? undefined : new AbortController();
    const kept = checkpointFlags !== undefined && !discardsCheckpointsAtEnd(checkpointFlags.retention ?? DEFAULT_CHECKPOINT_RETENTION, 'cancelled');
    const onSignal = (signal: NodeJS.Signals): void =>
      cancel?.abort(new EngineError('WEFT_ERR_TASK_CANCELLED', `the job was cancelled by ${signal}; ${kept ? `its checkpoints stay: restore it with --job-id ${jobId ?? '<id>'} --from-checkpoint latest` : `its checkpoints are removed (--checkpoint-retention ${checkpointFlags?.retention ?? ''})`}`));
    if (cancel !== undefined) {
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
    }
    try {
      result = await runJob({
        ...(cancel === undefined ? {} : { signal: cancel.signal }),
        job: jobPath,
        args: rest,
        ...(jobId === undefined ? {} : { jobId }),
        eventLog,
        fileSystems,
        // ctx.readRedisStream's redis:// streams (a connection only once a source opens one)
        streamConnectors: [new (await import('@weft/job-store')).RedisStreamConnector()],
        ...(parallelism === undefined ? {} : { parallelism }),
        ...(adaptive === undefined ? {} : { adaptive }),
        executor: cluster ?? executor,
        ...(workers === undefined ? {} : { workers }),
        ...(slots === undefined ? {} : { slotsPerExecutor: slots }),
        ...(exchangeMode === undefined ? {} : { exchangeMode: exchangeMode as ExchangeMode }),
        ...(approximate?.reconnectTimeoutMs === undefined ? {} : { approximateReconnectTimeoutMs: approximate.reconnectTimeoutMs }),
        ...recovery,
        ...memory,
        ...(checkpointFlags === undefined ? {} : { checkpointing: { ...checkpointFlags, storage: new BlobCheckpointStorage(checkpointStore as BlobStore) } }),
        releasePartitionsDuringJob: values['no-release-during-job'] !== true,
        ...(harness === undefined ? {} : { faults: harness.factory }),
        shuffle: { pipelined, blocking: harness === undefined ? blocking : harness.wrapShuffle(blocking) },
        cwd: io.cwd,
        workerExecArgv: execArgv,
        ...(prestarted === undefined ? {} : { prestartedWorkers: prestarted }),
        // each failover as it happens, on stderr (stdout stays the summary, or the JSON with --json)
        onFailover: (failover) => {
          io.stderr.write(`${tty && shown ? '\r\x1b[K' : ''}${formatFailoverLine(failover)}`);
        },
        ...(tty || ui !== undefined
          ? {
              onProgress: (progress) => {
                ui?.onProgress(progress);
                if (!tty) return;
                io.stderr.write(`\r\x1b[K${formatProgressLine(progress)}`);
                shown = true;
              },
            }
          : {}),
      });
    } catch (error) {
      if (isShuffleConfigError(error)) throw usageError('run', (error as Error).message, error);
      // fenced before it ran (a newer run of the job id registered it first): it changed nothing, exit 1
      if ((error as { code?: unknown })?.code === 'WEFT_ERR_FENCED') {
        io.stderr.write(`weft run: ${formatFailure(error)}`);
        return ExitCode.FAILED;
      }
      // no executor to run on, or a worker process that died before it took the job: an expected fault, exit 1
      if (isEngineError(error, 'WEFT_ERR_NO_TASK_EXECUTOR') || isEngineError(error, 'WEFT_ERR_TASK_EXECUTOR_LOST')) {
        io.stderr.write(`weft run: job failed: ${error.code}: ${error.message}\n`);
        return ExitCode.FAILED;
      }
      // the shuffle could not take the job (e.g. a server pool with no live server): the job failed, exit 1
      if (isShuffleFailure(error)) {
        io.stderr.write(`weft run: job failed: ${(error as Error).message}\n`);
        if ((io.env['WEFT_DEBUG'] ?? '') !== '') io.stderr.write(`${JSON.stringify(describeError(error))}\n`);
        return ExitCode.FAILED;
      }
      throw error;
    } finally {
      if (cancel !== undefined) {
        process.removeListener('SIGINT', onSignal);
        process.removeListener('SIGTERM', onSignal);
      }
      if (shown) io.stderr.write('\r\x1b[K');
      await harness?.close(); // continues any shuffle server it stopped
      await ui?.server.close(); // before the log it reads
      await checkpointStore?.close().catch(() => {});
      await eventLog.close().catch(() => {});
      await Promise.all(fileSystems.map((fs) => fs.close().catch(() => {})));
    }
    if (result.resumeFallback !== undefined) io.stderr.write(`weft run: could not resume job ${result.jobId}, so it ran again from the start: ${result.resumeFallback}\n`);

    const faults = harness === undefined ? '' : formatFaultReport(harness);
    const replication = serverFactory?.replication();
    const shuffle = replication === undefined ? '' : formatReplicationLine(replication);
    if (replication !== undefined && replication.used < replication.requested) {
      const live = replication.liveServers === undefined ? '' : ` (${replication.liveServers} live shuffle server${replication.liveServers === 1 ? '' : 's'})`;
      io.stderr.write(`weft run: warning: --shuffle-replicas ${replication.requested} asks for more copies than the pool can hold${live}: ${replication.used} kept of each partition\n`);
    }
    if (values.json === true) {
      const extra = {
        cli: cliRuntime(),
        ...(harness === undefined ? {} : { faults: { spec: harness.replaySpec, seed: harness.seed, injected: harness.faults } }),
        ...(replication === undefined ? {} : { shuffleReplicas: replication }),
        ...(cluster === undefined ? {} : { cluster: { url: cluster.description, executors: cluster.executors.map((e) => ({ id: e.id, url: e.record.advertisedUrl, slots: e.slots })), refused: cluster.refused } }),
      };
      io.stdout.write(`${JSON.stringify(runSummaryJson(result, extra))}\n`);
      io.stderr.write(formatRunSummary(result) + shuffle + faults);
    } else {
      io.stdout.write(formatRunSummary(result) + shuffle + faults);
    }
    if (result.status === 'failed') {
      io.stderr.write(`weft run: ${formatFailure(result.error)}`);
      if (values.json !== true && result.error !== undefined && (io.env['WEFT_DEBUG'] ?? '') !== '') io.stderr.write(`${JSON.stringify(describeError(result.error))}\n`);
      return ExitCode.FAILED;
    }
    return ExitCode.OK;
  },
};
