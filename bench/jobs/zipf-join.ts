// A Zipf-skewed join (issue 14's skew target): FACTS ⋈ DIMS on the key, then the weighted amount summed
// per key. Reads --input <dir> holding `facts.tbl` (`key|amount` lines, keys Zipf-distributed: one key holds
// a large share) and `dims.tbl` (`key|weight`, one line per key), written by writeZipfTables; writes
// `key<TAB>sum` lines to --output (any order).
//
//   npx weft run bench/jobs/zipf-join.ts --parallelism auto --skewed-threshold 8mb -- --input DIR --output OUT
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { defineJob } from '@weft/engine';

type Fact = { readonly key: string; readonly amount: number };
type Dim = { readonly key: string; readonly weight: number };

const parseFact = (line: string): Fact => {
  const bar = line.indexOf('|');
  return { key: line.slice(0, bar), amount: Number(line.slice(bar + 1)) };
};
const parseDim = (line: string): Dim => {
  const bar = line.indexOf('|');
  return { key: line.slice(0, bar), weight: Number(line.slice(bar + 1)) };
};

export default defineJob(
  (ctx) => {
    const { input, output } = ctx.args;
    if (input === undefined || output === undefined) throw new Error('zipf-join needs --input DIR and --output PATH');
    const facts = ctx.readTextFile(join(input, 'facts.tbl'), { name: 'read-facts' }).map(parseFact, { name: 'parse-facts' });
    const dims = ctx.readTextFile(join(input, 'dims.tbl'), { name: 'read-dims' }).map(parseDim, { name: 'parse-dims' });
    facts
      .keyBy((f) => f.key)
      .join(dims.keyBy((d) => d.key), (f, d): [string, number] => [f.key, f.amount * d.weight], { name: 'join' })
      .keyBy(([key]) => key)
      .reduce((a, b) => [a[0], a[1] + b[1]], { name: 'sum' })
      .map(([key, sum]) => `${key}\t${sum}`, { name: 'format' })
      .writeText(output, { name: 'write' });
  },
  { name: 'zipf-join' },
);

/** mulberry32: the same tables from the same seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Writes `facts` fact lines with Zipf(s) keys over `keys` keys, and one dim line per key, into `dir`. */
export async function writeZipfTables(dir: string, request: { readonly facts: number; readonly keys: number; readonly s: number; readonly seed?: number }): Promise<void> {
  await mkdir(dir, { recursive: true });
  const cumulative = new Float64Array(request.keys);
  let total = 0;
  for (let i = 0; i < request.keys; i++) total += 1 / (i + 1) ** request.s;
  let acc = 0;
  for (let i = 0; i < request.keys; i++) cumulative[i] = acc += 1 / (i + 1) ** request.s / total;
  const next = random(request.seed ?? 15);
  // facts in slices, so a large table never sits in memory whole
  const stream = createWriteStream(join(dir, 'facts.tbl'));
  for (let done = 0; done < request.facts; ) {
    const n = Math.min(1 << 18, request.facts - done);
    let text = '';
    for (let k = 0; k < n; k++) {
      const u = next();
      let lo = 0;
      let hi = request.keys - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (u < (cumulative[mid] as number)) hi = mid;
        else lo = mid + 1;
      }
      text += `k${lo}|${1 + Math.floor(next() * 1000)}\n`;
    }
    done += n;
    if (!stream.write(text)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
  let dims = '';
  for (let i = 0; i < request.keys; i++) dims += `k${i}|${(i % 9) + 1}\n`;
  await writeFile(join(dir, 'dims.tbl'), dims);
}
