import { type AddressInfo, type Server, createServer } from 'node:net';
import { type Logger, invalidConfig } from '@weft/shuffle-api';
import type { ProducedPartitionRegistry } from './produced-partition-registry.js';
import { type ControlHandler, ServerConnection } from './server-connection.js';
import { type ConnectionSocket, LocalSocket } from '../wire/local-socket.js';

export interface PartitionServerOptions {
  readonly host: string;
  readonly port: number;
  readonly registry: ProducedPartitionRegistry;
  readonly control: ControlHandler;
  readonly logger: Logger;
  readonly maxFrameBytes: number;
}

/**
 * The TCP server of one environment: consumers connect to read the partitions it produces, its master
 * connects to announce and release them. `close()` stops listening and drops every connection.
 */
export class PartitionServer {
  private readonly server: Server;
  private readonly sockets = new Set<ConnectionSocket>();
  #address: { host: string; port: number } | undefined;
  #closed: Promise<void> | undefined;

  private constructor(private readonly options: PartitionServerOptions) {
    this.server = createServer((socket) => this.#accept(socket));
  }

  /**
   * A connection from this process without TCP (a gate reading partitions its own environment serves):
   * the client's end, served as a TCP connection is; undefined once the server is closing.
   */
  connectLocal(): LocalSocket | undefined {
    if (this.#closed !== undefined) return undefined;
    const [client, server] = LocalSocket.pair();
    this.#accept(server);
    return client;
  }

  #accept(socket: ConnectionSocket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    new ServerConnection(socket, this.options.registry, this.options.control, this.options.logger, this.options.maxFrameBytes);
  }

  /** Listens; SHF_ERR_INVALID_CONFIG naming `port` (or `host`) when the address cannot be bound. */
  static async listen(options: PartitionServerOptions): Promise<PartitionServer> {
    const server = new PartitionServer(options);
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', (error: NodeJS.ErrnoException) => {
        const setting = error.code === 'EADDRINUSE' || error.code === 'EACCES' ? 'port' : 'host';
        reject(invalidConfig(setting, `the network shuffle cannot listen on ${options.host}:${options.port}: ${error.message}`, error));
      });
      server.server.listen(options.port, options.host, () => resolve());
    });
    server.server.on('error', (error) => options.logger.error({ error: error.message }, 'partition server error'));
    const address = server.server.address() as AddressInfo;
    server.#address = { host: options.host, port: address.port };
    return server;
  }

  get address(): { host: string; port: number } {
    return this.#address!;
  }

  /**
   * Stops listening and ends every connection after what was written to it (consumers read the errors a
   * closing environment sent them); a connection not closed by its peer within `lingerMs` is destroyed.
   */
  close(lingerMs = 1000): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        for (const socket of this.sockets) socket.destroy();
      }, lingerMs);
      this.server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      for (const socket of this.sockets) socket.end();
    });
    return this.#closed;
  }
}
