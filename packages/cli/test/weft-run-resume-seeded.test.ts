// `weft run --job-id` (docs/DESIGN.md contract 7; issue 11 tests): the job master SIGKILLed at seeded points
// of its event log over the examples, on the embedded stores (SQLite job event log, file:// store), each
// resumed by the same command. WEFT_KILL_RUNS / WEFT_KILL_SEED change the count and replay another seed.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir } from '@weft/testkit';
import { describeSeededMasterKills } from './helpers/seeded-master-kills.js';

describeSeededMasterKills({
  title: 'weft run --job-id on SQLite + file store, the job master SIGKILLed at seeded points',
  runs: Number(process.env.WEFT_KILL_RUNS ?? 30),
  seed: Number(process.env.WEFT_KILL_SEED ?? 0x5eed11),
  examples: [
    { file: 'word-count.ts', jobArgs: ['--lines', '20000'] },
    { file: 'terasort.ts', jobArgs: ['--records', '50000'] },
    { file: 'tpch-revenue.ts', jobArgs: ['--customers', '2000', '--orders', '20000'] },
  ],
  async start() {
    const dir = await createTempDir('weft-resume-seeded-');
    const meta = join(dir.path, 'meta.db');
    const log = new SqliteJobEventLog({ path: meta });
    return {
      dir: dir.path,
      env: process.env,
      flags: ['--meta', `sqlite://${meta}`, '--store', pathToFileURL(join(dir.path, 'store')).href],
      log,
      async stop() {
        await log.close();
        await dir.remove();
      },
    };
  },
});
