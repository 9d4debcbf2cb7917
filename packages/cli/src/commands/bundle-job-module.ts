import { readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { JOB_MODULE_BUILDS_ENV } from '@weft/engine';

interface Esbuild {
  build(options: Record<string, unknown>): Promise<unknown>;
}

/**
 * From built code, a TypeScript job module is compiled once, by esbuild, into one plain JavaScript file
 * beside it (`.<name>.weft-<pid>.mjs`: the same directory, so its bare imports resolve as the job's do;
 * packages stay external, so `@weft/engine` is the one this process loaded), removed when this process
 * exits. The engine imports it in the job's place (`WEFT_JOB_MODULE_BUILDS`, inherited by the workers);
 * the job keeps its own path everywhere else (the module hash a resume checks, messages). So neither
 * this process nor its workers load tsx or run its loader hooks (measured: bench/README.md).
 *
 * A `weft` killed outright (SIGKILL) leaves its bundle behind; the next bundling in that directory removes
 * bundles whose process is gone (they match `.*.weft-*.mjs`, which .gitignore ignores).
 *
 * Returns false — and the caller falls back to tsx — when esbuild cannot build it (a syntax error is then
 * reported by the usual path) or the directory is not writable.
 */
export async function bundleJobModule(jobPath: string): Promise<boolean> {
  const dir = dirname(jobPath);
  const out = join(dir, `.${basename(jobPath)}.weft-${process.pid}.mjs`);
  removeOrphanBundles(dir);
  try {
    // esbuild is tsx's dependency, so resolved from tsx (this package depends on tsx)
    const fromTsx = createRequire(fileURLToPath(import.meta.resolve('tsx')));
    const esbuild = (await import(pathToFileURL(fromTsx.resolve('esbuild')).href)) as Esbuild;
    await esbuild.build({ entryPoints: [jobPath], outfile: out, bundle: true, packages: 'external', format: 'esm', platform: 'node', target: 'node20', sourcemap: 'inline', logLevel: 'silent' });
  } catch {
    rmSync(out, { force: true });
    return false;
  }
  process.once('exit', () => rmSync(out, { force: true }));
  const builds = { ...(JSON.parse(process.env[JOB_MODULE_BUILDS_ENV] ?? '{}') as Record<string, string>), [pathToFileURL(jobPath).href]: pathToFileURL(out).href };
  process.env[JOB_MODULE_BUILDS_ENV] = JSON.stringify(builds);
  return true;
}

const BUNDLE_NAME = /^\..+\.weft-(\d+)\.mjs$/;

/** Removes bundles in `dir` whose `weft` process is gone (it was killed before its exit handler ran). */
function removeOrphanBundles(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = BUNDLE_NAME.exec(name)?.[1];
    if (pid === undefined || alive(Number(pid))) continue;
    rmSync(join(dir, name), { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
