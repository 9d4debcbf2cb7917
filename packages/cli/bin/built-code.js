// Whether `weft` may run its built code (bin/weft.js): every workspace package the CLI loads has a dist/
// no older than its src/. Cheap: one recursive directory listing and a stat per file of each package
// (a few hundred files, ~20 ms), no hashing. Plain JavaScript, so the shim needs no loader.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * The workspace packages the CLI loads (its @weft dependencies; @weft/ui only for `weft ui` and `--ui`, but
 * from the same dist/ when built); the CLI package itself is checked too.
 */
export const CLI_PACKAGES = ['@weft/shuffle-api', '@weft/engine', '@weft/shuffle-memory', '@weft/shuffle-network', '@weft/shuffle-remote', '@weft/job-store', '@weft/cluster', '@weft/ui'];

/** Newest (`newest: true`) or oldest modification time of the files under `dir` passing `filter`; undefined when none. */
function mtimeOf(dir, newest, filter) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true, recursive: true });
  } catch {
    return undefined;
  }
  let found;
  for (const entry of entries) {
    if (!entry.isFile() || !filter(entry.name)) continue;
    const t = statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs;
    if (found === undefined || (newest ? t > found : t < found)) found = t;
  }
  return found;
}

/** The newest modification time (ms) of a file under `packageDir`/src; undefined when there is none. */
export function newestSourceMtime(packageDir) {
  return mtimeOf(join(packageDir, 'src'), true, () => true);
}

/**
 * Whether `packageDir` has a build no older than its sources: its oldest `.js` file under dist/ is at
 * least as new as its newest file under src/. No dist/ (or no .js in it): false. No src/ (a package
 * installed without its sources): true.
 */
export function isBuildFresh(packageDir) {
  const oldestBuilt = mtimeOf(join(packageDir, 'dist'), false, (name) => name.endsWith('.js'));
  if (oldestBuilt === undefined) return false;
  const newestSource = mtimeOf(join(packageDir, 'src'), true, () => true);
  return newestSource === undefined || newestSource <= oldestBuilt;
}

/** Whether the CLI at `cliDir` (and every package of CLI_PACKAGES, resolved from it) has a fresh build with dist/main.js. */
export function useBuiltCode(cliDir) {
  if (!existsSync(join(cliDir, 'dist', 'main.js')) || !isBuildFresh(cliDir)) return false;
  const require = createRequire(join(cliDir, 'package.json'));
  for (const name of CLI_PACKAGES) {
    let dir;
    try {
      dir = dirname(require.resolve(`${name}/package.json`));
    } catch {
      return false;
    }
    if (!isBuildFresh(dir)) return false;
  }
  return true;
}

/**
 * The node arguments that run the CLI at `cliDir` in the calling process's place, with no shim in between
 * (bin/weft.js from source runs the command as its child), so the pid a caller spawns is the command's
 * own: its built main when useBuiltCode says so and WEFT_FROM_SOURCE is not 1, otherwise its sources
 * through tsx. For tests and tools that signal the process they start.
 */
export function weftNodeArgs(cliDir) {
  if (process.env.WEFT_FROM_SOURCE !== '1' && useBuiltCode(cliDir)) return [join(cliDir, 'dist', 'main.js')];
  return ['--conditions=source', '--import', import.meta.resolve('tsx'), join(cliDir, 'src', 'main.ts')];
}
