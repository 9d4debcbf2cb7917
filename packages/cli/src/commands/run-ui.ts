import { randomBytes } from 'node:crypto';
import type { JobEventLog, JobProgress } from '@weft/engine';
import type { UiServer } from '@weft/ui';
import type { CliIo } from '../command.js';
import { usageError } from '../parse-command-args.js';
import { startCliUi } from './ui-server-start.js';

/** `--ui [PORT]` as given to `weft run`: the port (0: a free one) and the interface. */
export interface RunUiRequest {
  readonly port: number;
  readonly host: string | undefined;
  readonly token: string | undefined;
}

export const RUN_UI_USAGE = `  --ui [PORT]               serve the web UI of this run while it runs (\`weft ui\` in the job master's
                            process, on the run's event log, with the job master's counters at /metrics);
                            prints "ui on http://host:port" on stderr before the job starts; PORT
                            default 0 (a free one); the server closes when the job ends
  --ui-host H               with --ui: interface to listen on (default 127.0.0.1; beyond loopback it needs
                            --ui-token or $WEFT_UI_TOKEN)
  --ui-token T              with --ui: read-only token of its API (default: $WEFT_UI_TOKEN)`;

/**
 * Takes `--ui [PORT]` (an optional value node's parseArgs cannot express), `--ui=PORT`, `--ui-host H` and
 * `--ui-token T` out of `weft run`'s own arguments (those before `--`): PORT is the next argument when
 * it is a number. Usage errors name the flag.
 */
export function extractRunUiFlags(args: readonly string[]): { args: string[]; ui: RunUiRequest | undefined } {
  const separator = args.indexOf('--');
  const own = separator === -1 ? [...args] : args.slice(0, separator);
  const rest = separator === -1 ? [] : args.slice(separator);
  const kept: string[] = [];
  let port: number | undefined;
  let wanted = false;
  let host: string | undefined;
  let token: string | undefined;
  const portOf = (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n > 65535) throw usageError('run', `--ui PORT must be an integer in [0, 65535], got ${JSON.stringify(value)}`);
    return n;
  };
  for (let i = 0; i < own.length; i++) {
    const arg = own[i] as string;
    if (arg === '--ui') {
      wanted = true;
      const next = own[i + 1];
      if (next !== undefined && /^\d+$/.test(next)) {
        port = portOf(next);
        i++;
      }
    } else if (arg.startsWith('--ui=')) {
      wanted = true;
      port = portOf(arg.slice('--ui='.length));
    } else if (arg === '--ui-host' || arg === '--ui-token') {
      const value = own[i + 1];
      if (value === undefined || value.startsWith('--')) throw usageError('run', `${arg} needs a value`);
      if (arg === '--ui-host') host = value;
      else token = value;
      i++;
    } else kept.push(arg);
  }
  if (!wanted && (host !== undefined || token !== undefined)) throw usageError('run', `${host !== undefined ? '--ui-host' : '--ui-token'} needs --ui`);
  return { args: [...kept, ...rest], ui: wanted ? { port: port ?? 0, host, token } : undefined };
}

/** A fresh job id in runJob's own format, so the UI's /metrics can name the job before runJob reports it. */
export function newRunJobId(): string {
  return `job-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/** The UI of a `weft run --ui`: its server, and the progress callback that feeds its /metrics. */
export interface RunUi {
  readonly server: UiServer;
  /** The job master's progress, as runJob's onProgress reports it. */
  onProgress(progress: JobProgress): void;
}

export async function startRunUi(request: { ui: RunUiRequest; eventLog: JobEventLog; jobId: string; io: CliIo }): Promise<RunUi> {
  let latest: JobProgress | undefined;
  const server = await startCliUi({
    command: 'run',
    eventLog: request.eventLog,
    host: request.ui.host,
    port: request.ui.port,
    token: request.ui.token,
    hostFlag: '--ui-host',
    tokenFlag: '--ui-token',
    liveJob: () => (latest === undefined ? undefined : { jobId: request.jobId, progress: latest }),
    io: request.io,
  });
  request.io.stderr.write(`ui on ${server.url}\n`);
  return {
    server,
    onProgress: (progress) => {
      latest = progress;
    },
  };
}
