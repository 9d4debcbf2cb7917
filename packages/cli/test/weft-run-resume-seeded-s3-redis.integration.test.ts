// `weft run --job-id` (docs/DESIGN.md contract 7; issue 11 tests) on S3 (s3rver) + Redis: the job event log
// in the --meta Redis (a Stream per job), partitions in S3; the job master SIGKILLed at seeded points of
// its log, each run resumed by the same command. WEFT_KILL_RUNS_S3 / WEFT_KILL_SEED change count and seed.
import { createJobEventLog } from '@weft/job-store';
import { createTempDir, startRedis, startS3Server } from '@weft/testkit';
import { describeSeededMasterKills } from './helpers/seeded-master-kills.js';

describeSeededMasterKills({
  title: 'weft run --job-id on S3 + Redis, the job master SIGKILLed at seeded points',
  runs: Number(process.env.WEFT_KILL_RUNS_S3 ?? 10),
  seed: Number(process.env.WEFT_KILL_SEED ?? 0x5eed12),
  examples: [
    { file: 'word-count.ts', jobArgs: ['--lines', '20000'] },
    { file: 'terasort.ts', jobArgs: ['--records', '50000'] },
    { file: 'tpch-revenue.ts', jobArgs: ['--customers', '2000', '--orders', '20000'] },
  ],
  async start() {
    const [s3, redis, dir] = await Promise.all([startS3Server({ buckets: ['weft-kills'] }), startRedis({ persistent: false }), createTempDir('weft-resume-seeded-s3-')]);
    const meta = `redis://${redis.host}:${redis.port}/0`;
    const log = await createJobEventLog(meta);
    return {
      dir: dir.path,
      env: { ...process.env, AWS_ENDPOINT_URL_S3: s3.endpoint, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey },
      flags: ['--meta', meta, '--store', 's3://weft-kills/shuffle'],
      log,
      async stop() {
        await Promise.allSettled([log.close(), s3[Symbol.asyncDispose](), redis.close(), dir.remove()]);
      },
    };
  },
});
