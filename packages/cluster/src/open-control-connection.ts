import { request } from 'node:http';
import type { Socket } from 'node:net';
import { CONTROL_UPGRADE, type FromExecutorMessage, type ToExecutorMessage } from './control-protocol.js';
import { ControlSocket } from './control-socket.js';

export type MasterConnection = ControlSocket<FromExecutorMessage, ToExecutorMessage>;

/** Opens a control connection to the executor at `advertisedUrl` (`GET /control`, upgraded), within `timeoutMs`. */
export function openControlConnection(advertisedUrl: string, timeoutMs: number): Promise<MasterConnection> {
  return new Promise((resolve, reject) => {
    let url: URL;
    try {
      url = new URL('/control', advertisedUrl);
    } catch (error) {
      reject(new Error(`${JSON.stringify(advertisedUrl)} is not a URL`, { cause: error }));
      return;
    }
    if (url.protocol !== 'http:') {
      reject(new Error(`${advertisedUrl}: only http:// control URLs are supported`));
      return;
    }
    const req = request(url, { method: 'GET', headers: { Connection: 'Upgrade', Upgrade: CONTROL_UPGRADE }, timeout: timeoutMs });
    req.on('upgrade', (_response, socket: Socket, head: Buffer) => {
      req.setTimeout(0);
      socket.setTimeout(0);
      resolve(new ControlSocket<FromExecutorMessage, ToExecutorMessage>(socket, head));
    });
    req.on('response', (response) => {
      response.resume();
      reject(new Error(`${advertisedUrl} answered ${response.statusCode} instead of a control connection`));
    });
    req.on('timeout', () => req.destroy(new Error(`no control connection to ${advertisedUrl} within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
