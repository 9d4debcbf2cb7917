// The registry heartbeat of a task executor, on a thread of its own (RegistryHeartbeat): the executor's
// main thread runs user functions, which may hold its event loop for seconds; its registration must not
// lapse meanwhile. Messages: {type:'record', record} replaces the record (written at once);
// {type:'stop', deregister} stops, deletes the record if asked, and answers {type:'stopped'}.
import { parentPort, workerData } from 'node:worker_threads';
import type { ExecutorRecord } from './executor-record.js';
import { RedisExecutorRegistry } from './redis-executor-registry.js';

interface HeartbeatThreadData {
  readonly url: string;
  readonly keyPrefix: string;
  readonly intervalMs: number;
  readonly ttlMs: number;
  readonly record: ExecutorRecord;
}

const data = workerData as HeartbeatThreadData;
const port = parentPort;
let record = data.record;
const registry = new RedisExecutorRegistry({ url: data.url, keyPrefix: data.keyPrefix, setting: 'cluster' });
let timer: ReturnType<typeof setInterval> | undefined;

async function beat(): Promise<void> {
  try {
    await registry.heartbeat(record, data.ttlMs);
  } catch (error) {
    port?.postMessage({ type: 'warn', message: `registry heartbeat failed: ${(error as Error).message}` });
  }
}

port?.on('message', (message: { type: 'record'; record: ExecutorRecord } | { type: 'stop'; deregister: boolean }) => {
  if (message.type === 'record') {
    record = message.record;
    void beat();
    return;
  }
  if (timer !== undefined) clearInterval(timer);
  void (async () => {
    if (message.deregister) await registry.deregister(record.id).catch((error: unknown) => port.postMessage({ type: 'warn', message: `deregistering failed: ${(error as Error).message}` }));
    await registry.close().catch(() => {});
    port.postMessage({ type: 'stopped' });
    port.close();
  })();
});

try {
  await registry.start();
  await registry.heartbeat(record, data.ttlMs);
  timer = setInterval(() => void beat(), data.intervalMs);
  port?.postMessage({ type: 'started' });
} catch (error) {
  port?.postMessage({ type: 'failed', message: (error as Error).message, code: (error as { code?: unknown }).code });
  await registry.close().catch(() => {});
  port?.close();
}
