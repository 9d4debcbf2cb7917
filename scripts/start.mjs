#!/usr/bin/env node
// `npm start`: the main job on the embedded default — `weft run examples/word-count.ts` over a generated
// corpus, on worker processes, with the blocking shuffle in a local directory and its metadata in SQLite
// (both under ./.weft/), no server needed. Prints live progress (on a terminal), the top words and a
// summary. Extra arguments go to `weft run`, e.g. `npm start -- --parallelism 4`.
//
// Environment:
//   WEFT_START_CORPUS_MB   size of the generated corpus in MB (default 64; fractions allowed, e.g. 0.1)
//   WEFT_START_DIR         where the corpus, the counts and (unless WEFT_STORE / WEFT_META say otherwise)
//                          the blocking shuffle go (default: ./.weft/ in the repository)
//   WEFT_STORE, WEFT_META  the blocking shuffle's storage and metadata, as for `weft run`
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const megabytes = Number(process.env.WEFT_START_CORPUS_MB ?? 64);
if (!Number.isFinite(megabytes) || megabytes <= 0) {
  process.stderr.write(`npm start: WEFT_START_CORPUS_MB must be a number > 0, got ${JSON.stringify(process.env.WEFT_START_CORPUS_MB)}\n`);
  process.exit(2);
}
const ownDir = process.env.WEFT_START_DIR !== undefined && process.env.WEFT_START_DIR !== '';
const dir = ownDir ? resolve(process.env.WEFT_START_DIR) : join(root, '.weft');
const bytes = Math.round(megabytes * 1024 * 1024);
const corpus = join(dir, 'corpus', `corpus-${megabytes}mb.txt`);
const output = join(dir, 'word-count', 'counts.tsv');
const env = { ...process.env };
if (ownDir) {
  // keep the shuffle next to the rest, not in the repository's ./.weft/
  env.WEFT_STORE ??= pathToFileURL(join(dir, 'shuffle')).href;
  env.WEFT_META ??= `sqlite://${join(dir, 'shuffle-meta.db')}`;
}

mkdirSync(join(dir, 'corpus'), { recursive: true });
if (!existsSync(corpus) || statSync(corpus).size < bytes) {
  process.stdout.write(`Generating a ${megabytes} MB corpus at ${corpus} (once) …\n`);
  const generated = spawnSync(process.execPath, ['--import', 'tsx', 'examples/lib/corpus.ts', corpus, String(bytes)], { stdio: 'inherit', cwd: root });
  if (generated.status !== 0) process.exit(generated.status ?? 1);
}

process.stdout.write(`weft run examples/word-count.ts ${process.argv.slice(2).join(' ')} -- --input ${corpus} --output ${output}\n\n`);
const result = spawnSync(
  process.execPath,
  ['packages/cli/bin/weft.js', 'run', 'examples/word-count.ts', ...process.argv.slice(2), '--', '--input', corpus, '--output', output],
  { stdio: 'inherit', cwd: root, env },
);
if (result.status === 0) process.stdout.write(`\nEvery word's count: ${output}\n`);
process.exit(result.status ?? 1);
