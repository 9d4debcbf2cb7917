import type { JobEventLog } from '@weft/engine';
import { type Command, ExitCode } from '../command.js';
import { integerFlag, parseCommandArgs, usageError } from '../parse-command-args.js';
import { settingProblem } from './run-settings.js';
import { type Closeable, openUiCluster } from './ui-cluster.js';
import { startCliUi } from './ui-server-start.js';
import { defaultMetaUrl } from './default-stores.js';

const USAGE = `Usage: weft ui [--meta URL] [--port N] [--host H] [--token T] [--cluster URL [--shuffle-servers URL]]

Serves the web UI of the jobs in a job event log: the jobs list, each job's graph with its pipelined
regions, task attempts per executor, failovers with their cause, restart strategy, and live counters of
running jobs (published by their job masters to the same log every second). Prints "ui on
http://host:port" once it listens; runs until SIGINT or SIGTERM, then exits 0. Read-only.

Options:
  --meta URL                where the job event log is: sqlite:///abs/file.db, redis://host:port/db or
                            redis+sentinel://host:port[,host:port…]/name/db
                            (default: $WEFT_META, else ./.weft/shuffle-meta.db — the store \`weft run\` uses)
  --port N                  port to listen on (default 0: a free one, printed)
  --host H                  interface to listen on (default 127.0.0.1). Anything but loopback (127.x,
                            ::1, localhost) needs a token
  --token T                 read-only token every API request must carry (Authorization: Bearer T, or
                            ?token=T in the URL), at least 16 bytes (default: $WEFT_UI_TOKEN)
  --cluster URL             also show the task executors registered in this Redis (default: $WEFT_CLUSTER)
  --shuffle-servers URL     with --cluster: the shuffle servers' registry (default: $WEFT_SHUFFLE_SERVERS,
                            else --cluster)
  -h, --help                show this help

GET /metrics answers Prometheus text (requests, event streams); \`weft run … --ui\` adds the job master's
progress. See packages/ui/README.md for the API.

Exit codes: 0 stopped by a signal; 2 bad usage, a bad or unreachable --meta, a host beyond loopback
without a token, or a port that cannot be taken.
`;

const JOB_STORE_MODULE = '@weft/job-store';

/** Resolves on the first SIGINT or SIGTERM (the handlers are removed then). */
function untilSignal(): Promise<string> {
  return new Promise((resolvePromise) => {
    const on = (signal: string): void => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolvePromise(signal);
    };
    process.once('SIGINT', on);
    process.once('SIGTERM', on);
  });
}

export const uiCommand: Command = {
  name: 'ui',
  summary: 'serve the web UI of the jobs in a job event log (graph, regions, attempts, failovers, live progress)',
  usage: USAGE,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs('ui', args, {
      meta: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      token: { type: 'string' },
      cluster: { type: 'string' },
      'shuffle-servers': { type: 'string' },
    });
    if (positionals.length > 0) throw usageError('ui', `unexpected argument ${JSON.stringify(positionals[0])}`);
    const port = integerFlag('ui', '--port', values.port, 0);
    if (port !== undefined && port > 65535) throw usageError('ui', `--port must be at most 65535, got ${port}`);
    const flag = values.meta !== undefined ? '--meta' : io.env['WEFT_META'] !== undefined ? 'WEFT_META' : '--meta (default)';
    const meta = values.meta ?? io.env['WEFT_META'] ?? defaultMetaUrl(io.cwd);
    const clusterUrl = values.cluster ?? (io.env['WEFT_CLUSTER'] === '' ? undefined : io.env['WEFT_CLUSTER']);
    if (clusterUrl === undefined && values['shuffle-servers'] !== undefined) throw usageError('ui', '--shuffle-servers needs --cluster');
    const { createJobEventLog } = (await import(JOB_STORE_MODULE)) as typeof import('@weft/job-store');
    let eventLog: JobEventLog;
    try {
      eventLog = await createJobEventLog(meta, { setting: flag, retryTimeoutMs: 5_000 });
    } catch (error) {
      throw usageError('ui', settingProblem(flag, error), error);
    }
    const opened: Closeable[] = [eventLog];
    try {
      let cluster;
      if (clusterUrl !== undefined) {
        const servers = values['shuffle-servers'] !== undefined ? { value: values['shuffle-servers'], source: '--shuffle-servers' } : io.env['WEFT_SHUFFLE_SERVERS'] ? { value: io.env['WEFT_SHUFFLE_SERVERS'], source: 'WEFT_SHUFFLE_SERVERS' } : { value: clusterUrl, source: '--cluster' };
        const found = await openUiCluster({ cluster: { value: clusterUrl, source: values.cluster !== undefined ? '--cluster' : 'WEFT_CLUSTER' }, servers });
        opened.unshift(...found.opened);
        cluster = found.list;
      }
      const server = await startCliUi({ command: 'ui', eventLog, host: values.host, port, token: values.token, hostFlag: '--host', tokenFlag: '--token', cluster, io });
      opened.unshift(server);
      const stopped = untilSignal();
      io.stdout.write(`ui on ${server.url}\n`);
      io.stderr.write(`weft ui: reading the job event log ${eventLog.description}\n`);
      const signal = await stopped;
      io.stderr.write(`weft ui: ${signal}: stopping\n`);
      return ExitCode.OK;
    } finally {
      for (const resource of opened) await resource.close().catch(() => {});
    }
  },
};
