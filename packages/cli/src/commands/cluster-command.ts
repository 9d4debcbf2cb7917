import type { JobRunRecord } from '@weft/engine';
import type { ExecutorRecord } from '@weft/cluster';
import type { LiveServer } from '@weft/shuffle-remote/client';
import { type Command, ExitCode } from '../command.js';
import { parseCommandArgs, usageError } from '../parse-command-args.js';
import { type ClusterStatus, formatClusterStatus, sortClusterStatus, toClusterStatusJob, toClusterStatusServer } from './cluster-status-report.js';
import { settingProblem } from './run-settings.js';

const USAGE = `Usage: weft cluster status --cluster redis://host:port/db [--shuffle-servers URL] [--meta URL] [--json]

Shows a cluster (docs/cluster.md), in three tables:
  task executors registered in the --cluster Redis: id, advertised URL, host, slots free of total, weft
    version, live or draining;
  shuffle servers registered in the --shuffle-servers Redis (\`weft shuffle-server --redis\`): id, URL,
    live, draining or suspect (a client reported it unreachable lately), disk free and used, streams
    (load) of the most, partitions held;
  jobs whose event log is in the --meta Redis: id, job, status, tasks finished of total, epoch, owner of
    the newest lease; unfinished ones (running, or their job master is gone) first.
--json prints {"cluster", "shuffleServersRedis", "eventLog", "executors": [record…], "shuffleServers":
[…], "jobs": […], "slots": N, "freeSlots": N}.

Options:
  --cluster URL             the cluster's Redis (default: $WEFT_CLUSTER)
  --shuffle-servers URL     the shuffle servers' registry (default: $WEFT_SHUFFLE_SERVERS, else --cluster)
  --meta URL                where the jobs' event log is, a Redis URL (default: $WEFT_META when it is one,
                            else --cluster)
  --json                    print a machine-readable answer
  -h, --help                show this help

Whether a job master excludes a shuffle server lives in that job master only; it is not shown here.

Exit codes: 0 answered; 2 bad usage or an unreachable Redis.
`;

const isRedis = (url: string | undefined): url is string => url !== undefined && /^rediss?(\+sentinel)?:\/\//.test(url);

export const clusterCommand: Command = {
  name: 'cluster',
  summary: 'show a cluster: task executors and slots, shuffle servers, jobs (weft cluster status)',
  usage: USAGE,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs('cluster', args, {
      cluster: { type: 'string' },
      'shuffle-servers': { type: 'string' },
      meta: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (positionals[0] !== 'status' || positionals.length > 1) throw usageError('cluster', positionals.length === 0 ? 'missing subcommand: status' : `unknown subcommand ${JSON.stringify(positionals.join(' '))} (expected status)`);
    const url = values.cluster ?? io.env['WEFT_CLUSTER'];
    if (url === undefined || url === '') throw usageError('cluster', 'missing --cluster redis://host:port/db');
    const serversAt = values['shuffle-servers'] !== undefined ? { value: values['shuffle-servers'], source: '--shuffle-servers' } : isRedis(io.env['WEFT_SHUFFLE_SERVERS']) ? { value: io.env['WEFT_SHUFFLE_SERVERS'], source: 'WEFT_SHUFFLE_SERVERS' } : { value: url, source: '--cluster' };
    const metaAt = values.meta !== undefined ? { value: values.meta, source: '--meta' } : isRedis(io.env['WEFT_META']) ? { value: io.env['WEFT_META'], source: 'WEFT_META' } : { value: url, source: '--cluster' };
    if (!isRedis(metaAt.value)) throw usageError('cluster', `${metaAt.source}: expected a Redis URL (redis://host:port/db), got ${JSON.stringify(metaAt.value)}`);

    const [{ RedisExecutorRegistry }, { RedisServerRegistry }, { createJobEventLog }] = await Promise.all([import('@weft/cluster'), import('@weft/shuffle-remote/client'), import('@weft/job-store')]);
    const opened: { close(): Promise<void> }[] = [];
    const open = async <T extends { close(): Promise<void> }>(source: string, create: () => T | Promise<T>, start: (t: T) => Promise<void>): Promise<T> => {
      try {
        const resource = await create();
        opened.push(resource);
        await start(resource);
        return resource;
      } catch (error) {
        throw usageError('cluster', settingProblem(source, error), error);
      }
    };
    let status: ClusterStatus;
    try {
      const executorsRegistry = await open('--cluster', () => new RedisExecutorRegistry({ url, setting: '--cluster' }), (r) => r.start());
      const serverRegistry = await open(serversAt.source, () => new RedisServerRegistry({ url: serversAt.value, setting: serversAt.source }), (r) => r.start());
      const eventLog = await open(metaAt.source, () => createJobEventLog(metaAt.value, { setting: metaAt.source, retryTimeoutMs: 5_000 }), async () => {});
      const [executors, servers, runs]: [ExecutorRecord[], LiveServer[], JobRunRecord[]] = await Promise.all([executorsRegistry.listLive(), serverRegistry.listLive(), eventLog.listRuns()]);
      status = sortClusterStatus({
        cluster: executorsRegistry.description,
        shuffleServersRedis: serverRegistry.description,
        eventLog: eventLog.description,
        executors,
        shuffleServers: servers.map(toClusterStatusServer),
        jobs: runs.map(toClusterStatusJob),
        slots: executors.reduce((n, e) => n + e.slots, 0),
        freeSlots: executors.reduce((n, e) => n + e.freeSlots, 0),
      });
    } finally {
      await Promise.allSettled(opened.map((r) => r.close()));
    }
    io.stdout.write(values.json === true ? `${JSON.stringify(status)}\n` : formatClusterStatus(status));
    return ExitCode.OK;
  },
};
