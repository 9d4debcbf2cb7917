// `weft run --shuffle-servers` SIGKILLed while its workers push partitions to a real `weft shuffle-server`
// that is frozen (SIGSTOP): the workers' writes can never drain, and still every process of the run is
// gone soon after the kill, each worker saying once, in one line, that its job master is gone.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type PoolServer, type ShuffleServerPool, type TempDir, createTempDir, startShuffleServerPool } from '@weft/testkit';
import { alive, assertRunGone, descendants, filesUnder, isWorker, waitFor } from './helpers/process-tree.js';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));
const terasort = fileURLToPath(new URL('../../../examples/terasort.ts', import.meta.url));
const SECRET = 'orphans-shuffle-servers-secret-0123456789';

describe('weft run on shuffle servers SIGKILLed while its workers push', () => {
  let pool: ShuffleServerPool;
  let server: PoolServer;
  let dir: TempDir;
  before(async () => {
    [pool, dir] = await Promise.all([startShuffleServerPool({ count: 1, secret: SECRET }), createTempDir('weft-orphans-servers-')]);
    server = pool.servers[0]!;
  });
  after(async () => {
    await Promise.allSettled([pool?.close(), dir?.remove()]);
  });

  it('leaves no process running even when the workers are blocked writing to a frozen shuffle server', { timeout: 120_000 }, async () => {
    const shim = spawn(
      process.execPath,
      [bin, 'run', terasort, '--executor', 'workers', '--workers', '2', '--parallelism', '2', '--shuffle-servers', pool.redisUrl, '--', '--records', '2000000', '--output', join(dir.path, 'out')],
      { cwd: dir.path, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WEFT_SHUFFLE_SECRET: SECRET } },
    );
    let stderr = '';
    shim.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    shim.stdout!.resume();
    const closed = new Promise<void>((resolve) => shim.stderr!.on('close', () => resolve()));
    const shimPid = shim.pid!;
    let tree: number[] = [];
    try {
      await waitFor('two workers', () => (descendants(shimPid).filter(isWorker).length === 2 ? true : undefined), 60_000).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}; the run said:\n${stderr}`);
      });
      await waitFor('pushed data on the server', () => (filesUnder(join(server.dir, 'objects')) > 0 ? true : undefined), 60_000);
      tree = descendants(shimPid);
      const workers = tree.filter(isWorker);
      server.pause();
      // the workers keep producing until their pushes stall on the frozen server
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      process.kill(shimPid, 'SIGKILL');
      await assertRunGone({ pids: [shimPid, ...tree], workers, closed, stderr: () => stderr });
    } finally {
      server.resume();
      for (const pid of [shimPid, ...tree]) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});
