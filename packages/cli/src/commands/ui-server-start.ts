import type { JobEventLog } from '@weft/engine';
import type { UiClusterSnapshot, UiLiveJob, UiServer } from '@weft/ui';
import type { CliIo } from '../command.js';
import { usageError } from '../parse-command-args.js';

/** The UI package is loaded only by `weft ui` and `weft run --ui`, not when `weft` starts. */
const UI_MODULE = '@weft/ui';

export interface CliUiRequest {
  /** `ui` or `run`: the command errors name. */
  readonly command: string;
  readonly eventLog: JobEventLog;
  readonly host: string | undefined;
  readonly port: number | undefined;
  /** The --token flag (else WEFT_UI_TOKEN, else none). */
  readonly token: string | undefined;
  /** How the host was given, for messages (`--host`, `--ui-host`). */
  readonly hostFlag: string;
  readonly tokenFlag: string;
  readonly cluster?: (() => Promise<UiClusterSnapshot>) | undefined;
  readonly liveJob?: (() => UiLiveJob | undefined) | undefined;
  readonly io: CliIo;
}

/**
 * Starts the UI server for a command, its option errors as usage errors (exit 2) naming the flag: a host
 * beyond loopback without a token names `--token` / `WEFT_UI_TOKEN`; a port taken names the port flag.
 */
export async function startCliUi(request: CliUiRequest): Promise<UiServer> {
  const { command, io } = request;
  const token = request.token ?? (io.env['WEFT_UI_TOKEN'] === '' ? undefined : io.env['WEFT_UI_TOKEN']);
  const tokenSource = request.token !== undefined ? request.tokenFlag : 'WEFT_UI_TOKEN';
  const { startUiServer } = (await import(UI_MODULE)) as typeof import('@weft/ui');
  try {
    return await startUiServer({
      eventLog: request.eventLog,
      ...(request.host === undefined ? {} : { host: request.host }),
      ...(request.port === undefined ? {} : { port: request.port }),
      ...(token === undefined ? {} : { token }),
      ...(request.cluster === undefined ? {} : { cluster: request.cluster }),
      ...(request.liveJob === undefined ? {} : { liveJob: request.liveJob }),
    });
  } catch (error) {
    const e = error as { code?: unknown; context?: { field?: unknown; reason?: unknown }; message?: string };
    if (e.code === 'WEFT_ERR_INVALID_ARGUMENT' && e.context?.field === 'token') {
      if (e.context.reason === 'token-required') throw usageError(command, `${request.hostFlag} ${request.host}: the UI listens beyond loopback, so it needs a read-only token: give ${request.tokenFlag} T or set WEFT_UI_TOKEN (at least 16 bytes)`, error);
      throw usageError(command, `${tokenSource}: ${e.message}`, error);
    }
    if (e.code === 'WEFT_ERR_INVALID_ARGUMENT') throw usageError(command, `${e.context?.field === 'host' ? request.hostFlag : 'the UI'}: ${e.message}`, error);
    if (e.code === 'EADDRINUSE' || e.code === 'EACCES' || e.code === 'EADDRNOTAVAIL') throw usageError(command, `the UI cannot listen on ${request.host ?? '127.0.0.1'}:${request.port ?? 0}: ${e.message}`, error);
    throw error;
  }
}
