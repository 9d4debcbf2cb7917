import { resolve } from 'node:path';
import { type CliIo, type Command, ExitCode } from '../command.js';
import { integerFlag, parseCommandArgs, usageError } from '../parse-command-args.js';
import { settingProblem } from './run-settings.js';
import { readSecret } from '../read-secret.js';
import { stderrLogger, untilSignal } from '../stderr-logger.js';

const USAGE = `Usage: weft task-executor --cluster redis://host:port/db [--slots N] [--host H] [--port N]
                          [--advertise-url URL] [--dir PATH] [options]

Runs a task executor of a cluster (docs/cluster.md): it registers in the cluster's Redis (id, address,
slots, free slots, weft version; renewed every --heartbeat-ms under a TTL), takes task deployments of
any job whose job master runs \`weft run --cluster\` with the same Redis, and runs their regions. The job's
code comes with the deployment (a bundle stored in Redis by sha256, cached under --dir). Deployments
must be signed with the shared secret ($WEFT_SHUFFLE_SECRET or --secret-file): unsigned or forged ones,
and those of another weft version, are refused and logged, and nothing of them runs.
Prints "task executor <id> registered" once it takes work. GET /healthz on its port answers 200 while
it does (503 while it drains: readiness); GET /livez answers 200 while it runs at all (liveness).
SIGTERM or SIGINT: takes no new work, lets running tasks finish (cancelling them after
--drain-timeout-ms), deregisters, exits 0.

Options:
  --cluster URL             the cluster's Redis: redis://host:port/db (default: $WEFT_CLUSTER)
  --slots N                 regions it runs at once, over all jobs (default 1)
  --host H                  interface to listen on (default 127.0.0.1; 0.0.0.0 for every interface)
  --port N                  port to listen on (default 0: any free port)
  --advertise-url URL       the URL job masters connect to (default http://<host>:<port>)
  --dir PATH                its directory: the job code cache (default ./.weft/task-executor)
  --id ID                   its id in the registry (default te-<hostname>-<random>)
  --secret-file PATH        file holding the shared secret (default: $WEFT_SHUFFLE_SECRET)
  --heartbeat-ms N          registry heartbeat interval (default 1000)
  --heartbeat-ttl-ms N      the registry record's TTL: missing heartbeats this long, it is lost (default 5000)
  --orphan-timeout-ms N     a job whose job master went away keeps its slots this long, waiting for a
                            new master of that job (default 30000)
  --drain-timeout-ms N      SIGTERM: running tasks are cancelled after this long (default 30000)
  --verbose                 log state changes on stderr
  --json                    print {"registered": id, "url": url} instead of the registered line
  -h, --help                show this help

Blocking shuffle data must be readable from every host: the job master's --store s3://… with
--meta redis://…, or --shuffle-servers; S3 credentials come from the AWS_* variables of this process.

Exit codes: 0 stopped by a signal after draining; 1 failed while running; 2 bad usage or a setting that
does not work (bad URL, unreachable Redis, port in use).
`;

export const taskExecutorCommand: Command = {
  name: 'task-executor',
  summary: 'run a cluster task executor: registers in Redis, runs the regions job masters deploy to it',
  usage: USAGE,
  async run(args, io: CliIo) {
    const { values, positionals } = parseCommandArgs('task-executor', args, {
      cluster: { type: 'string' },
      slots: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'advertise-url': { type: 'string' },
      dir: { type: 'string' },
      id: { type: 'string' },
      'secret-file': { type: 'string' },
      'heartbeat-ms': { type: 'string' },
      'heartbeat-ttl-ms': { type: 'string' },
      'orphan-timeout-ms': { type: 'string' },
      'drain-timeout-ms': { type: 'string' },
      verbose: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    if (positionals.length > 0) throw usageError('task-executor', `unexpected argument ${JSON.stringify(positionals[0])}`);
    const cluster = values.cluster ?? io.env['WEFT_CLUSTER'];
    if (cluster === undefined || cluster === '') throw usageError('task-executor', 'missing --cluster redis://host:port/db');
    const int = (flag: string, value: string | undefined, min: number): number | undefined => integerFlag('task-executor', flag, value, min);
    const port = int('--port', values.port, 0);
    if (port !== undefined && port > 65_535) throw usageError('task-executor', `--port must be at most 65535, got ${port}`);
    const secret = await readSecret('task-executor', values['secret-file'], io);
    const { TaskExecutorService } = await import('@weft/cluster');
    const logger = stderrLogger(io, values.verbose === true);
    let service: InstanceType<typeof TaskExecutorService>;
    try {
      service = new TaskExecutorService({
        cluster,
        secret,
        dir: resolve(io.cwd, values.dir ?? '.weft/task-executor'),
        slots: int('--slots', values.slots, 1),
        host: values.host,
        port,
        advertiseUrl: values['advertise-url'],
        id: values.id,
        heartbeatIntervalMs: int('--heartbeat-ms', values['heartbeat-ms'], 10),
        heartbeatTtlMs: int('--heartbeat-ttl-ms', values['heartbeat-ttl-ms'], 20),
        orphanTimeoutMs: int('--orphan-timeout-ms', values['orphan-timeout-ms'], 0),
        drainTimeoutMs: int('--drain-timeout-ms', values['drain-timeout-ms'], 0),
        // the shuffle and file-system modules jobs name: spare workers import them before a job comes
        preloadModules: ['@weft/shuffle-memory', '@weft/shuffle-remote', '@weft/shuffle-remote/client'],
        logger,
      });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 'WEFT_ERR_INVALID_ARGUMENT' || code === 'SHF_ERR_INVALID_CONFIG') throw usageError('task-executor', executorSettingProblem(error), error);
      throw error;
    }
    const signal = untilSignal();
    try {
      // a signal while it is still connecting stops it there (exit 0, nothing registered)
      const first = await Promise.race([service.start().then(() => undefined), signal.received]);
      if (first !== undefined) {
        logger.info({ signal: first }, 'stopped before it registered');
        await service.drain().catch(() => {});
        return ExitCode.OK;
      }
    } catch (error) {
      signal.dispose();
      await service.drain().catch(() => {});
      const code = (error as { code?: unknown }).code;
      if (code === 'SHF_ERR_INVALID_CONFIG' || code === 'EADDRINUSE' || code === 'EADDRNOTAVAIL' || code === 'EACCES') throw usageError('task-executor', executorSettingProblem(error), error);
      throw error;
    }
    io.stdout.write(values.json === true ? `${JSON.stringify({ registered: service.id, url: service.url })}\n` : `task executor ${service.id} registered\n`);
    const received = await signal.received;
    logger.info({ signal: received }, 'draining');
    await service.drain();
    return ExitCode.OK;
  },
};

/** A setting error of `weft task-executor`: the flag named in the user's words (`--cluster`) where the error names its setting. */
function executorSettingProblem(error: unknown): string {
  const setting = (error as { context?: { setting?: unknown } }).context?.setting;
  return setting === 'cluster' ? settingProblem('--cluster', error) : (error as Error).message;
}
