// Preloaded with `node --import` (through NODE_OPTIONS) into weft processes, to see where a worker's RSS
// goes: samples process.memoryUsage() every 20 ms and, at exit, writes to $WEFT_BENCH_MEM_DIR one line
// per sample (`t rss heapTotal heapUsed external arrayBuffers`, MiB) and, on the sample of the highest
// RSS, V8's heap spaces. For investigation (bench/README.md's spill section), not part of a figure.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

const dir = process.env['WEFT_BENCH_MEM_DIR'];
const role = typeof process.send === 'function' ? 'worker' : 'main';
if (dir !== undefined && role === 'worker' && process.env['WEFT_BENCH_TRACE_GC'] === '1') setFlagsFromString('--trace-gc');
if (dir !== undefined) {
  const MIB = 1024 * 1024;
  const started = performance.now();
  const lines = [];
  let peak = 0;
  let spaces = '';
  const sample = () => {
    const m = process.memoryUsage();
    lines.push([((performance.now() - started) / 1000).toFixed(2), ...[m.rss, m.heapTotal, m.heapUsed, m.external, m.arrayBuffers].map((b) => (b / MIB).toFixed(0))].join(' '));
    if (m.rss > peak) {
      peak = m.rss;
      spaces = getHeapSpaceStatistics().map((s) => `${s.space_name}=${(s.space_size / MIB).toFixed(0)}/${(s.space_used_size / MIB).toFixed(0)}`).join(' ');
    }
  };
  setInterval(sample, 20).unref();
  process.on('exit', () => {
    sample();
    writeFileSync(join(dir, `${role}-${process.pid}`), `# t rss heapTotal heapUsed external arrayBuffers (MiB)\n# at peak rss ${(peak / MIB).toFixed(0)}: ${spaces}\n${lines.join('\n')}\n`);
  });
}
