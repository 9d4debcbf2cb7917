// Preloaded with `node --import` into a process and (through execArgv) its weft workers: on exit, writes
// `<role> <pid> <bytes>` — process.resourceUsage().maxRSS, in bytes — to a file of its own under
// $WEFT_BENCH_RSS_DIR (role `worker` for a forked process, `main` otherwise).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env['WEFT_BENCH_RSS_DIR'];
const role = typeof process.send === 'function' ? 'worker' : 'main';
if (dir !== undefined) {
  process.on('exit', () => {
    writeFileSync(join(dir, `${role}-${process.pid}`), `${role} ${process.pid} ${process.resourceUsage().maxRSS * 1024}\n`);
  });
}
