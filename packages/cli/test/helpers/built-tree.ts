// A freshly built copy of the packages `weft` loads, made under a temporary directory, so a test can run
// the built CLI (bin/weft.js starting dist/main.js with plain node), fresh or made stale, without touching
// the checkout's dist/ or sources, where other tests, running at the same time, start bin/weft.js.
//
// <dir>/packages/<name>: package.json, src/, bin/, tsup.config.ts and tsconfig.json of the CLI and of each
// package of CLI_PACKAGES, built by tsup with the package's own config but no declarations (esbuild only);
// <dir>/node_modules: a link to each entry of the checkout's node_modules, except @weft/*, which link to
// the copies; <dir>/examples: the word-count job and its lib/, so the job's `@weft/engine` is the copy's.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, cp, mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error plain JavaScript next to the shim, no declarations
import { CLI_PACKAGES } from '../../bin/built-code.js';

const checkout = fileURLToPath(new URL('../../../..', import.meta.url));
const checkoutCli = join(checkout, 'packages', 'cli');
const builder = fileURLToPath(new URL('../../../../scripts/build-js.mjs', import.meta.url));

/** Where the built copy's pieces are. */
export interface BuiltTree {
  /** The copy's packages/cli (what `useBuiltCode` is asked about). */
  readonly cliDir: string;
  /** The copy's bin/weft.js. */
  readonly bin: string;
  /** The copy's examples/ directory (the job, and where its esbuild bundle is written). */
  readonly examplesDir: string;
}

/** Copies and builds the CLI's packages under `dir` (an empty directory the caller removes). */
export async function buildTree(dir: string): Promise<BuiltTree> {
  const require = createRequire(join(checkoutCli, 'package.json'));
  const names = [...(CLI_PACKAGES as string[]), '@weft/cli'];
  const sources = names.map((name) => (name === '@weft/cli' ? checkoutCli : dirname(require.resolve(`${name}/package.json`))));
  const packageDirs = sources.map((source) => basename(source));
  await copyFile(join(checkout, 'tsconfig.base.json'), join(dir, 'tsconfig.base.json'));
  await writeFile(join(dir, 'package.json'), '{ "private": true, "type": "module" }\n');
  for (const source of sources) {
    const target = join(dir, 'packages', basename(source));
    await mkdir(target, { recursive: true });
    for (const file of ['package.json', 'tsup.config.ts', 'tsconfig.json']) await copyFile(join(source, file), join(target, file));
    await cp(join(source, 'src'), join(target, 'src'), { recursive: true });
    if (existsSync(join(source, 'bin'))) await cp(join(source, 'bin'), join(target, 'bin'), { recursive: true });
    // a dependency npm could not hoist (none today) stays where the package resolves it
    if (existsSync(join(source, 'node_modules'))) await symlink(join(source, 'node_modules'), join(target, 'node_modules'));
  }
  await linkNodeModules(dir, names, sources);
  await mkdir(join(dir, 'examples'));
  await copyFile(join(checkout, 'examples', 'package.json'), join(dir, 'examples', 'package.json'));
  await copyFile(join(checkout, 'examples', 'word-count.ts'), join(dir, 'examples', 'word-count.ts'));
  await cp(join(checkout, 'examples', 'lib'), join(dir, 'examples', 'lib'), { recursive: true });
  await run(process.execPath, [builder, ...packageDirs.map((name) => join(dir, 'packages', name))]);
  return { cliDir: join(dir, 'packages', 'cli'), bin: join(dir, 'packages', 'cli', 'bin', 'weft.js'), examplesDir: join(dir, 'examples') };
}

/** <dir>/node_modules: links to the checkout's entries, @weft/* to the copies (only those copied). */
async function linkNodeModules(dir: string, names: readonly string[], sources: readonly string[]): Promise<void> {
  const modules = join(dir, 'node_modules');
  await mkdir(join(modules, '@weft'), { recursive: true });
  for (const entry of await readdir(join(checkout, 'node_modules'))) {
    if (entry !== '@weft') await symlink(join(checkout, 'node_modules', entry), join(modules, entry));
  }
  for (const [i, name] of names.entries()) {
    await symlink(join(dir, 'packages', basename(sources[i] as string)), join(modules, name));
  }
}

function run(command: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, (error, _stdout, stderr) => {
      if (error !== null) reject(new Error(`${error.message}\n${stderr}`));
      else resolve();
    });
  });
}
