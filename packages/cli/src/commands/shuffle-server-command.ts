import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
// The server itself is imported when this command runs: every other command (`weft run` first, whose
// workers are forked only once the CLI is loaded) would otherwise load it at start-up.
import type { ShuffleServer, ShuffleServerOptions } from '@weft/shuffle-remote/server';
import { type CliIo, type Command, ExitCode } from '../command.js';
import { integerFlag, parseCommandArgs, usageError } from '../parse-command-args.js';
import { settingProblem } from './run-settings.js';
import { stderrLogger, untilSignal } from '../stderr-logger.js';

const USAGE = `Usage: weft shuffle-server --port <n> --dir <path> [--redis <url>] [--store <s3 url>] [options]

Runs a standalone shuffle server: producers push blocking partitions to it over HTTP, consumers fetch
them, so compute can come and go without losing shuffle data. It stores partitions under --dir, copies
them to an S3 tier with --store, and registers in Redis (address, free disk, load, heartbeat) with
--redis. Prints "listening on http(s)://<host>:<port>" once it accepts requests. SIGTERM or SIGINT:
stops accepting, finishes the requests in flight, deregisters, exits 0. API: packages/shuffle-remote/docs/http-api.md.

Options:
  --port N                  port to listen on (0: any free port)
  --dir PATH                directory holding the partitions (created when missing); one server's
                            alone: the server locks it (<dir>/.lock) and a second one on it exits 2
  --redis URL               register in Redis and publish commits there: redis://host:port/db or
                            redis+sentinel://host:port[,host:port…]/name/db
  --store URL               S3 tier: s3://bucket/prefix (default: $WEFT_STORE; endpoint and credentials
                            from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID,
                            AWS_SECRET_ACCESS_KEY). Only committed partitions become S3 objects
  --tier-mode MODE          on-commit (default): copy a partition to S3 when it is committed;
                            write-through: send pushes to S3 part by part as they reach the disk
  --tier-transfers N        S3 transfers at once, about 3 MiB of memory each (default 16); more wait
  --offload                 delete a partition's disk copy once its S3 copy is committed, and serve its
                            fetches from S3
  --host HOST               interface to listen on (default 127.0.0.1; 0.0.0.0 for every interface)
  --advertise-url URL       the URL clients are given (default http(s)://<host>:<port>)
  --secret-file PATH        file holding the shared secret (default: $WEFT_SHUFFLE_SECRET)
  --tls-cert PATH           serve HTTPS with this certificate (PEM; needs --tls-key)
  --tls-key PATH            the certificate's private key (PEM)
  --max-body-bytes N        largest push (default 16 GiB); larger ones are refused with 413
  --max-streams N           pushes and fetches served at once (default 512); more get 503 + Retry-After
  --idle-timeout-ms N       close connections idle this long, stalled uploads included (default 30000)
  --shutdown-timeout-ms N   how long SIGTERM waits for requests in flight (default 30000)
  --heartbeat-ms N          registry heartbeat interval (default 2000); a server whose heartbeat is
                            older than 5x this (default 10000) is gone
  --verbose                 log state changes on stderr
  --json                    print {"listening": url, "serverId": id} instead of the listening line
  -h, --help                show this help

WEFT_SERVER_FAULT_HOOKS=1 (fault tests only, needs --redis): the server honours faults armed in Redis by
\`weft run --inject-faults kill-shuffle-server|pause-shuffle-server\` and kills (SIGKILL) or stops (SIGSTOP)
itself at exactly that point of a push, commit or fetch. Never set it in production. Its registry record
carries its pid, hostname and --dir for such tools (meaningful on its own machine only).

The shared secret (at least 16 bytes) signs job tokens: HMAC-SHA256 of the job id. Give the same one to
the job's shuffle master (WEFT_SHUFFLE_SECRET); workers only carry tokens.

The directory lock: <dir>/.lock names the pid, host and start time of the server holding --dir; a
graceful shutdown removes it. A server started on a directory whose lock names a live process, or
another host, prints SHF_ERR_DIR_LOCKED with that holder and exits 2 (stop the other server, or, if
that process is really gone, remove the lock file). A lock left on this host by a process that is gone
(kill -9, a crash) is taken over by the next server.

Exit codes: 0 stopped by a signal after a graceful shutdown; 1 failed while running; 2 bad usage or a
setting that does not work (bad URL, unreachable Redis or bucket, port in use, unreadable file), or --dir
held by another server (SHF_ERR_DIR_LOCKED).
`;

function integer(flag: string, value: string | undefined, min: number): number | undefined {
  return integerFlag('shuffle-server', flag, value, min);
}

/** Which flag a server setting comes from, for messages. */
const FLAG_OF: Record<string, string> = {
  dir: '--dir',
  port: '--port',
  host: '--host',
  redis: '--redis',
  secret: '$WEFT_SHUFFLE_SECRET / --secret-file',
  advertiseUrl: '--advertise-url',
  tls: '--tls-cert / --tls-key',
  faultHooks: 'WEFT_SERVER_FAULT_HOOKS',
  'tls.certFile': '--tls-cert',
  'tls.keyFile': '--tls-key',
  'tier.store': '--store',
  'tier.mode': '--tier-mode',
  'tier.maxTransfers': '--tier-transfers',
  'store.bucket': '--store',
  'store.endpoint': '--store (AWS_ENDPOINT_URL_S3)',
  'store.credentials': '--store (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)',
  maxBodyBytes: '--max-body-bytes',
  maxConcurrentStreams: '--max-streams',
  idleTimeoutMs: '--idle-timeout-ms',
  shutdownTimeoutMs: '--shutdown-timeout-ms',
  heartbeatIntervalMs: '--heartbeat-ms',
};

export const shuffleServerCommand: Command = {
  name: 'shuffle-server',
  summary: 'run a standalone shuffle server (HTTP push/fetch of partitions, Redis registry, S3 tier)',
  usage: USAGE,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs('shuffle-server', args, {
      port: { type: 'string' },
      dir: { type: 'string' },
      redis: { type: 'string' },
      store: { type: 'string' },
      'tier-mode': { type: 'string' },
      'tier-transfers': { type: 'string' },
      offload: { type: 'boolean' },
      host: { type: 'string' },
      'advertise-url': { type: 'string' },
      'secret-file': { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'max-body-bytes': { type: 'string' },
      'max-streams': { type: 'string' },
      'idle-timeout-ms': { type: 'string' },
      'shutdown-timeout-ms': { type: 'string' },
      'heartbeat-ms': { type: 'string' },
      verbose: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    if (positionals.length > 0) throw usageError('shuffle-server', `unexpected argument ${JSON.stringify(positionals[0])}`);
    const port = integer('--port', values.port, 0);
    if (port === undefined) throw usageError('shuffle-server', 'missing --port <n>');
    if (port > 65_535) throw usageError('shuffle-server', `--port must be at most 65535, got ${port}`);
    if (values.dir === undefined || values.dir === '') throw usageError('shuffle-server', 'missing --dir <path>');
    if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) throw usageError('shuffle-server', '--tls-cert and --tls-key go together');
    const tierMode = values['tier-mode'];
    if (tierMode !== undefined && tierMode !== 'on-commit' && tierMode !== 'write-through') {
      throw usageError('shuffle-server', `--tier-mode must be on-commit or write-through, got ${JSON.stringify(tierMode)}`);
    }
    // the tier: --store, else WEFT_STORE (docs/DESIGN.md: it stands in for --store on every command); S3 only
    const storeSetting = values.store !== undefined ? '--store' : 'WEFT_STORE';
    const store = values.store ?? (io.env['WEFT_STORE'] === '' ? undefined : io.env['WEFT_STORE']);
    if (store !== undefined && !store.startsWith('s3://')) {
      throw usageError('shuffle-server', `${storeSetting}: the shuffle server's tier must be an S3 store, s3://bucket/prefix, got ${JSON.stringify(store)}`);
    }
    const tierTransfers = integer('--tier-transfers', values['tier-transfers'], 1);
    for (const [flag, given] of [['--tier-mode', tierMode !== undefined], ['--tier-transfers', tierTransfers !== undefined], ['--offload', values.offload === true]] as const) {
      if (given && store === undefined) throw usageError('shuffle-server', `${flag} needs an S3 tier: --store <s3 url> (or WEFT_STORE)`);
    }
    let secret: string | undefined;
    if (values['secret-file'] !== undefined) {
      const path = resolve(io.cwd, values['secret-file']);
      try {
        secret = (await readFile(path, 'utf8')).trim();
      } catch (error) {
        throw usageError('shuffle-server', `--secret-file: cannot read ${path}: ${(error as Error).message}`, error);
      }
    } else {
      secret = io.env['WEFT_SHUFFLE_SECRET'];
      if (secret === undefined || secret === '') throw usageError('shuffle-server', 'no shared secret: set WEFT_SHUFFLE_SECRET or give --secret-file <path>');
    }
    const heartbeat = integer('--heartbeat-ms', values['heartbeat-ms'], 10);
    const options: ShuffleServerOptions = {
      dir: resolve(io.cwd, values.dir),
      secret,
      port,
      ...(values.host === undefined ? {} : { host: values.host }),
      ...(values['advertise-url'] === undefined ? {} : { advertiseUrl: values['advertise-url'] }),
      ...(values.redis === undefined ? {} : { redis: values.redis }),
      ...(store === undefined
        ? {}
        : {
            tier: {
              store,
              ...(tierMode === undefined ? {} : { mode: tierMode }),
              ...(tierTransfers === undefined ? {} : { maxTransfers: tierTransfers }),
              ...(values.offload === true ? { keepLocal: false } : {}),
            },
          }),
      ...(values['tls-cert'] === undefined ? {} : { tls: { certFile: resolve(io.cwd, values['tls-cert']), keyFile: resolve(io.cwd, values['tls-key']!) } }),
      ...(heartbeat === undefined ? {} : { heartbeatIntervalMs: heartbeat, heartbeatTtlMs: heartbeat * 5 }),
      maxBodyBytes: integer('--max-body-bytes', values['max-body-bytes'], 1024),
      maxConcurrentStreams: integer('--max-streams', values['max-streams'], 1),
      idleTimeoutMs: integer('--idle-timeout-ms', values['idle-timeout-ms'], 1),
      shutdownTimeoutMs: integer('--shutdown-timeout-ms', values['shutdown-timeout-ms'], 0),
      ...(io.env['WEFT_SERVER_FAULT_HOOKS'] === '1' ? { faultHooks: true } : {}),
      logger: stderrLogger(io, values.verbose === true),
    };
    const { startShuffleServer } = await import('@weft/shuffle-remote/server');
    const signal = untilSignal();
    let server: ShuffleServer;
    try {
      server = await startShuffleServer(options);
    } catch (error) {
      signal.dispose();
      const code = (error as { code?: unknown }).code;
      if (code === 'SHF_ERR_INVALID_CONFIG' || code === 'SHF_ERR_INVALID_ARGUMENT') {
        const setting = String((error as { context?: { setting?: unknown } }).context?.setting ?? '');
        const tierSetting = setting === 'tier.store' || setting.startsWith('store.');
        const flag = (tierSetting && storeSetting === 'WEFT_STORE' ? FLAG_OF[setting]?.replace('--store', 'WEFT_STORE') : FLAG_OF[setting]) ?? (setting === '' ? '' : `setting ${setting}`);
        throw usageError('shuffle-server', flag === '' ? (error as Error).message : settingProblem(flag, error), error);
      }
      if (code === 'SHF_ERR_DIR_LOCKED') {
        // not a usage mistake: one line, no usage text and no stack
        io.stderr.write(`weft shuffle-server: ${code}: ${(error as Error).message}\n`);
        return ExitCode.USAGE;
      }
      throw error;
    }
    io.stdout.write(values.json === true ? `${JSON.stringify({ listening: server.url, serverId: server.serverId })}\n` : `listening on ${server.url}\n`);
    const received = await signal.received;
    options.logger?.info({ signal: received }, 'shutting down');
    await server.close();
    return ExitCode.OK;
  },
};
