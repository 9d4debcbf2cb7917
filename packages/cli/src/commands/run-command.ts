import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_APPROXIMATE_RECONNECT_TIMEOUT_MS, DEFAULT_CHECKPOINT_RETENTION, discardsCheckpointsAtEnd, EngineError, isEngineError, EXCHANGE_MODES, type ExternalFileSystem, type JobEventLog, type ExchangeMode, isExchangeMode, type JobResult, type PrestartedWorkers, prestartWorkers, type RestartStrategyOptions, runJob } from '@weft/engine';
import type { ShuffleServiceFactory } from '@weft/shuffle-api';
import type { ShuffleServerServiceFactory } from '@weft/shuffle-remote/client';
import type { BlobStore } from '@weft/shuffle-remote';
import { type Command, ExitCode } from '../command.js';
import { DEFAULT_STANDBY_TAKEOVER_MS, standBy } from './standby.js';
import { integerFlag, parseCommandArgs, usageError } from '../parse-command-args.js';
import type { FaultHarness } from '../faults/fault-harness.js';
import { type FaultSpec, parseFaultSpec } from '../faults/fault-spec.js';
import { formatFaultReport } from './fault-report.js';
import { describeError, formatFailoverLine, formatFailure, formatProgressLine, formatReplicationLine, formatRunSummary, runSummaryJson } from './run-report.js';
import { parseRecoveryFlags, RECOVERY_FLAGS } from './run-options.js';
import { MEMORY_FLAGS, parseMemoryFlags } from './memory-flags.js';
import { extractRunUiFlags, newRunJobId, type RunUi, startRunUi } from './run-ui.js';
import { ADAPTIVE_FLAGS, parseAdaptiveFlags } from './adaptive-flags.js';
import { CHECKPOINT_FLAGS, parseCheckpointFlags } from './checkpoint-flags.js';
import { APPROXIMATE_FLAGS, CHECKPOINTED_DEFAULT_RESTART, parseApproximateFlags } from './approximate-flags.js';
import { BlobCheckpointStorage } from './blob-checkpoint-storage.js';
import { defaultMetaUrl, defaultStoreUrl } from './default-stores.js';
import { FAULT_RESTART_ATTEMPTS, FAULT_RESTART_DELAY_MS, MAX_SHUFFLE_REPLICAS, RUN_USAGE } from './run-usage.js';
import { isShuffleConfigError, isShuffleFailure, type Setting, setting, settingProblem } from './run-settings.js';
import { BLOCKING_MODULE, blockingShuffle, NETWORK_MODULE, openEventLog, PIPELINED_MODULE, pipelinedShuffle, s3FileSystem, SERVER_MODULE, serverShuffle } from './run-backends.js';
import { cliRuntime, ensureTypeScriptLoader, workerExecArgv } from './job-module-loader.js';
import { printPlan } from './print-plan.js';
import { clusterProvider } from './cluster-provider.js';

export const runCommand: Command = {
  name: 'run',
  summary: 'run a batch job module on worker processes, with live progress and a summary',
  usage: RUN_USAGE,
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
      return printPlan(jobPath, { args: rest, parallelism, adaptive, exchangeMode: exchangeMode as ExchangeMode | undefined, checkpointed: checkpointFlags !== undefined, cwd: io.cwd, json: values.json === true }, io);
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
        if (isShuffleConfigError(error)) throw usageError('run', settingProblem(store.source, error), error);
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
