// The producer process of network.bench.ts. Commands over IPC:
//   {op: 'start'}                                   starts a network shuffle environment, answers {op: 'address', address}
//   {op: 'produce', descriptor, records, recordBytes} writes `records` records of `recordBytes` to subpartition 0, finishes, answers {op: 'produced', cpuMicros}
//   {op: 'raw', bytes}                               listens on a bare TCP server; the first connection gets `bytes` bytes in
//                                                    32 KiB writes (honouring backpressure), then the server closes; answers {op: 'raw-port', port},
//                                                    and {op: 'raw-done', cpuMicros} once the connection closed
import { createServer } from 'node:net';
import { type ShuffleDescriptor, taskExecutorId } from '@weft/shuffle-api';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';

type Command =
  | { op: 'start'; options: object }
  | { op: 'produce'; descriptor: ShuffleDescriptor; records: number; recordBytes: number }
  | { op: 'raw'; bytes: number };

let environment: ReturnType<ReturnType<typeof createNetworkShuffleServiceFactory>['createShuffleEnvironment']> | undefined;
const send = (message: object): void => void process.send!(message);
const cpuMicros = (since: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};

process.on('message', (command: Command) => {
  void (async () => {
    switch (command.op) {
      case 'start': {
        environment = createNetworkShuffleServiceFactory(command.options).createShuffleEnvironment({ taskExecutorId: taskExecutorId('conformance') });
        await environment.start();
        send({ op: 'address', address: environment.address });
        return;
      }
      case 'produce': {
        const cpu = process.cpuUsage();
        const writer = await environment!.createResultPartitionWriter({ descriptor: command.descriptor });
        const record = new Uint8Array(command.recordBytes).fill(7);
        for (let i = 0; i < command.records; i++) if (!writer.emitRecord(record, 0)) await writer.ready();
        await writer.finish();
        await writer.close();
        send({ op: 'produced', cpuMicros: cpuMicros(cpu) });
        return;
      }
      case 'raw': {
        const chunk = Buffer.alloc(32 * 1024, 7);
        const server = createServer((socket) => {
          server.close();
          const cpu = process.cpuUsage();
          socket.once('close', () => send({ op: 'raw-done', cpuMicros: cpuMicros(cpu) }));
          let left = command.bytes;
          const pump = (): void => {
            while (left > 0) {
              const n = Math.min(left, chunk.length);
              left -= n;
              if (!socket.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
                socket.once('drain', pump);
                return;
              }
            }
            socket.end();
          };
          pump();
        });
        server.listen(0, '127.0.0.1', () => send({ op: 'raw-port', port: (server.address() as { port: number }).port }));
        return;
      }
    }
  })().catch((error: unknown) => send({ op: 'error', message: String(error) }));
});
process.once('disconnect', () => void (environment?.close() ?? Promise.resolve()).then(() => process.exit(0)));
