#!/usr/bin/env node
// `npm start`: the main job on the embedded default — `weft run examples/word-count.ts` over a generated
// corpus, on worker processes, with the blocking shuffle in a local directory and its metadata in SQLite
// (both under ./.weft/), no server needed. Prints live progress (on a terminal), the top words and a
// summary. Extra arguments go to `weft run`, e.g. `npm start -- --parallelism 4`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const megabytes = Number(process.env.WEFT_START_CORPUS_MB ?? 64);
const corpus = join(root, '.weft', 'corpus', `corpus-${megabytes}mb.txt`);
const output = join(root, '.weft', 'word-count', 'counts.tsv');

mkdirSync(join(root, '.weft', 'corpus'), { recursive: true });
if (!existsSync(corpus) || statSync(corpus).size < megabytes * 1024 * 1024) {
  process.stdout.write(`Generating a ${megabytes} MB corpus at ${corpus} (once) …\n`);
  const generated = spawnSync(process.execPath, ['--import', 'tsx', 'examples/lib/corpus.ts', corpus, String(megabytes * 1024 * 1024)], { stdio: 'inherit', cwd: root });
  if (generated.status !== 0) process.exit(generated.status ?? 1);
}

process.stdout.write(`weft run examples/word-count.ts ${process.argv.slice(2).join(' ')} -- --input ${corpus} --output ${output}\n\n`);
const result = spawnSync(
  process.execPath,
  ['packages/cli/bin/weft.js', 'run', 'examples/word-count.ts', ...process.argv.slice(2), '--', '--input', corpus, '--output', output],
  { stdio: 'inherit', cwd: root },
);
if (result.status === 0) process.stdout.write(`\nEvery word's count: ${output}\n`);
process.exit(result.status ?? 1);
