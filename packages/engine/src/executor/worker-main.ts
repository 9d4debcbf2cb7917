// The entry point of a worker process (forked by WorkerPool). It loads the job module, rebuilds the
// shuffle factories from their references, and runs the regions it is sent in an in-process executor,
// reporting task events, progress and heartbeats over the IPC channel. Not part of the public API.
import type { LogFields, Logger } from '@weft/shuffle-api';
import { jobId as toJobId, taskExecutorId } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import { jobModuleImportUrl, loadJob } from '../graph/load-job.js';
import { resolveSerializer } from '../serialization/serializers.js';
import { serializeTaskError } from '../runtime/task-error-serialization.js';
import { InProcessTaskExecutor } from './in-process-task-executor.js';
import { rebuildFileSystem } from './rebuild-file-system.js';
import { rebuildShuffleFactory } from './rebuild-shuffle-factory.js';
import { rebuildStreamConnector } from './rebuild-stream-connector.js';
import { WorkerCheckpointing } from './worker-checkpointing.js';
import { type FromWorkerMessage, isToWorkerCheckpointMessage, type ToWorkerMessage, type WorkerInitMessage } from './worker-protocol.js';

// WEFT_WORKER_LOADER: a module imported before the job's modules (not before the engine's, which are
// loaded by now): the CLI running from built code names tsx's ESM loader here for a TypeScript job, so
// only what is imported after it — the job's own modules — goes through the loader's hooks (cheaper
// than `--import tsx`, which puts every module of the worker through them).
const loaderModule = process.env['WEFT_WORKER_LOADER'];
const loaderReady: Promise<unknown> = loaderModule === undefined || loaderModule === '' ? Promise.resolve() : import(loaderModule);
// Modules the job master named when it forked this worker ahead of the job: importing them now overlaps
// their loading with the master's start; later imports of the same specifiers reuse these.
for (const specifier of JSON.parse(process.env['WEFT_WORKER_PRELOAD'] ?? '[]') as string[]) void loaderReady.then(() => import(jobModuleImportUrl(specifier))).catch(() => {});

/**
 * Sends to the job master. A channel that breaks under a send (the master was killed) reports it to the
 * callback instead of as an unhandled 'error' event (`write EPIPE` and a stack trace): the 'disconnect'
 * that follows stops the worker.
 */
function send(message: FromWorkerMessage): void {
  if (!process.connected) return;
  try {
    process.send?.(message, undefined, {}, (error: Error | null) => {
      if (error !== null) masterGone();
    });
  } catch {
    masterGone();
  }
}

function ipcLogger(bindings: LogFields = {}): Logger {
  const forward = (level: 'info' | 'warn' | 'error') => (fieldsOrMessage: LogFields | string, message?: string) => {
    const fields = typeof fieldsOrMessage === 'string' ? {} : fieldsOrMessage;
    const text = typeof fieldsOrMessage === 'string' ? fieldsOrMessage : (message ?? '');
    send({ type: 'log', level, fields: { ...bindings, ...fields }, message: text });
  };
  return { debug: () => {}, info: forward('info'), warn: forward('warn'), error: forward('error'), child: (more) => ipcLogger({ ...bindings, ...more }) };
}

let executor: InProcessTaskExecutor | undefined;
/** A checkpointed job's link to the job master's checkpoints (WorkerInitMessage.checkpointed). */
let checkpointing: WorkerCheckpointing | undefined;
let fileSystems: readonly ExternalFileSystem[] = [];
const timers: ReturnType<typeof setInterval>[] = [];
let shuttingDown = false;
let executorId = '?';
let lost = false;

/** How long a worker whose job master vanished waits for its tasks to stop before it exits regardless. */
const ORPHAN_EXIT_MS = 5_000;

/**
 * The job master went away without telling us (killed, crashed): one line on stderr, cancel the tasks,
 * exit — within ORPHAN_EXIT_MS even if a task is stuck (blocked on a write that will never drain).
 * Whatever fails while stopping is expected (the tasks lost their master) and is not reported again.
 */
function masterGone(): void {
  if (lost) return;
  lost = true;
  checkpointing?.close();
  const running = executor?.progress().length ?? 0;
  if (!shuttingDown) {
    process.stderr.write(`weft worker ${executorId} (pid ${process.pid}): its job master is gone; stopping ${running} running task(s) and exiting\n`);
  }
  const quietExit = (): void => process.exit(1);
  process.on('uncaughtException', quietExit);
  process.on('unhandledRejection', quietExit);
  setTimeout(quietExit, ORPHAN_EXIT_MS).unref();
  void shutdown(1).finally(() => process.exit(process.exitCode ?? 1));
}

async function init(message: WorkerInitMessage): Promise<void> {
  executorId = message.executorId;
  const logger = ipcLogger({ taskExecutorId: message.executorId });
  await loaderReady;
  // Load the job and both shuffle modules at once: imports dominate a worker's start.
  const [loaded, pipelined, blocking, rebuilt, streamConnectors] = await Promise.all([
    // the job master checked the inputs already
    loadJob({ job: message.jobModuleUrl, args: message.args, parallelism: message.parallelism, exchangeMode: message.exchangeMode, cwd: message.cwd, checkInputs: false, ...(message.adaptive === undefined ? {} : { adaptive: message.adaptive }) }),
    rebuildShuffleFactory(message.pipelined, 'pipelined'),
    rebuildShuffleFactory(message.blocking, 'blocking'),
    Promise.all(message.fileSystems.map(rebuildFileSystem)),
    Promise.all((message.streamConnectors ?? []).map(rebuildStreamConnector)),
  ]);
  fileSystems = rebuilt;
  if (loaded.plan.fingerprint !== message.fingerprint) {
    throw new EngineError('WEFT_ERR_INVALID_JOB', `the job's build function made a different graph in worker ${message.executorId} than in the job master; it must be deterministic (no randomness, clock or environment)`, {
      context: { field: 'build' },
    });
  }
  if (shuttingDown) return;
  const id = taskExecutorId(message.executorId);
  const link = message.checkpointed === true ? new WorkerCheckpointing(send) : undefined;
  checkpointing = link;
  const started = await InProcessTaskExecutor.start({
    id,
    slots: message.slots,
    jobId: toJobId(message.jobId),
    plan: loaded.plan,
    pipelined,
    blocking,
    cwd: message.cwd,
    fileSystems,
    streamConnectors,
    serializer: loaded.definition.options.serializer ?? resolveSerializer(message.serializer),
    logger,
    killProcess: () => process.kill(process.pid, 'SIGKILL'),
    ...(message.peerAddress === undefined ? {} : { peerAddress: message.peerAddress }),
    ...(message.approximateReconnectTimeoutMs === undefined ? {} : { approximateReconnectTimeoutMs: message.approximateReconnectTimeoutMs }),
    ...(link === undefined ? {} : { checkpointing: link.provider }),
    listener: {
      onTaskEvent: (_executor, event) => {
        if (event.type === 'finished' || event.type === 'failed' || event.type === 'cancelled') link?.detach(event.attemptId);
        send({ type: 'task-event', event });
      },
      onExecutorLost: () => {},
    },
  });
  // Told to shut down while it started: nothing may keep the process alive.
  if (shuttingDown) {
    await started.close();
    return;
  }
  executor = started;
  timers.push(setInterval(() => send({ type: 'heartbeat' }), message.heartbeatIntervalMs));
  timers.push(
    setInterval(() => {
      const tasks = executor?.progress() ?? [];
      if (tasks.length > 0) send({ type: 'progress', tasks });
    }, message.progressIntervalMs),
  );
  const location = started.shuffleLocation;
  send({ type: 'ready', ...(location === undefined ? {} : { shuffleLocation: { host: location.host, port: location.port } }) });
}

async function shutdown(code: number): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  for (const timer of timers) clearInterval(timer);
  try {
    await executor?.close();
  } finally {
    await Promise.all(fileSystems.map((fs) => fs.close().catch(() => {})));
    if (process.connected) process.disconnect();
    process.exitCode = code;
  }
}

process.on('message', (raw: unknown) => {
  const message = raw as ToWorkerMessage;
  switch (message.type) {
    case 'init':
      init(message).catch((error: unknown) => {
        send({ type: 'init-failed', error: serializeTaskError(error) });
        void shutdown(1);
      });
      return;
    case 'deploy':
      executor?.deploy(message.deployment);
      return;
    case 'cancel':
      executor?.cancel(message.attemptIds, message.reason);
      return;
    case 'update-partition-info':
      executor?.updatePartitionInfo(message.descriptors);
      return;
    case 'shutdown':
      void shutdown(0);
      return;
    default:
      if (isToWorkerCheckpointMessage(message)) checkpointing?.handle(message);
      return;
  }
});

// The channel closed: after a 'shutdown' message that is the job master letting go (exit 0 once closed);
// otherwise the job master vanished.
process.on('disconnect', () => {
  if (shuttingDown) {
    setTimeout(() => process.exit(process.exitCode ?? 0), ORPHAN_EXIT_MS).unref();
    return;
  }
  masterGone();
});
