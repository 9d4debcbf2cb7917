import { Redis } from 'ioredis';
import { RedisJobEventLog } from '@weft/job-store';
import { type RedisServer, startRedis } from '@weft/testkit';
import { describeJobEventLogContract } from './support/job-event-log-contract.js';

let server: RedisServer | undefined;
let raw: Redis | undefined;
let prefix = '';

const eventsKey = (jobId: string): string => `${prefix}{${jobId}}:events`;

describeJobEventLogContract('RedisJobEventLog', {
  async setUp() {
    server = await startRedis();
    raw = new Redis(server.url);
    raw.on('error', () => {}); // reconnects while the contract takes the server away
  },
  async tearDown() {
    raw?.disconnect();
    await server?.close();
  },
  url: () => (server as RedisServer).url,
  create: async (options) => {
    prefix = options.keyPrefix ?? '';
    return RedisJobEventLog.connect({ url: (server as RedisServer).url }, options);
  },
  async appendTorn(jobId) {
    // a write cut short: the data field holds half of its JSON
    await (raw as Redis).xadd(eventsKey(jobId), '*', 'v', '1', 'seq', '99', 'epoch', '1', 'at', '1', 'type', 'task-finished', 'data', '{"executionVer');
  },
  async appendRaw(jobId, e) {
    await (raw as Redis).xadd(eventsKey(jobId), '*', 'v', String(e.v), 'seq', String(e.seq), 'epoch', String(e.epoch), 'at', String(e.atMs), 'type', e.type, 'data', JSON.stringify(e.data));
  },
  disrupt: () => (server as RedisServer).stop(),
  restore: () => (server as RedisServer).start(),
});
