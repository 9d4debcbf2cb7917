// How `weft run` loads a job module, in its own process and in its workers: as it is, as an esbuild
// bundle of a TypeScript module, or through tsx registered lazily — and how `--json` reports it.
import { bundleJobModule } from './bundle-job-module.js';

/** How the job module is loaded in this process and its workers (`--json`'s `cli.jobModule`). */
let jobModuleLoad: 'esbuild-bundle' | 'tsx' | 'as-is' = 'as-is';

/**
 * A TypeScript job module in a process started without tsx (the built CLI): bundled by esbuild into
 * plain JavaScript that this process and its workers import instead (bundleJobModule); if that fails,
 * tsx's loader registered here, as the workers get it lazily (WEFT_WORKER_LOADER).
 */
export async function ensureTypeScriptLoader(jobPath: string): Promise<void> {
  jobModuleLoad = 'as-is';
  if (!isTypeScript(jobPath) || process.execArgv.some((a) => a.includes('tsx'))) return;
  if (await bundleJobModule(jobPath)) {
    jobModuleLoad = 'esbuild-bundle';
    return;
  }
  jobModuleLoad = 'tsx';
  const { register } = await import('tsx/esm/api');
  register();
}

/**
 * Node options for workers: those of this process. A TypeScript job needs a loader: from the sources the
 * workers inherit `--import tsx` (this process has it); from built code they import the job's esbuild
 * bundle (ensureTypeScriptLoader), or, if there is none, register tsx lazily, after the engine's modules
 * are loaded (WEFT_WORKER_LOADER, set in this process's environment so replacement workers get it too) —
 * `--import tsx` would put every worker module through its hooks (measured in bench/README.md).
 */
export function workerExecArgv(jobPath: string): string[] {
  const argv = process.execArgv.filter((a) => !a.startsWith('--test') && !a.startsWith('--inspect'));
  const hasTsx = argv.some((a) => a.includes('tsx'));
  if (isTypeScript(jobPath) && !hasTsx && jobModuleLoad === 'tsx') process.env['WEFT_WORKER_LOADER'] ??= import.meta.resolve('tsx/esm');
  return argv;
}

function isTypeScript(jobPath: string): boolean {
  return /\.(c|m)?tsx?$/.test(jobPath);
}

/**
 * How this CLI process runs, for `--json` (`"cli"`): from the built code (`dist/`, plain node) or the
 * TypeScript sources (through tsx: `tsx: "preloaded"`), and how the job module is loaded — as it is
 * (JavaScript, or through the preloaded tsx), as an esbuild bundle, or through tsx registered lazily.
 */
export function cliRuntime(): { readonly code: 'built' | 'source'; readonly tsx: 'preloaded' | 'none'; readonly jobModule: 'esbuild-bundle' | 'tsx' | 'as-is' } {
  const code = import.meta.url.endsWith('.ts') ? 'source' : 'built';
  const preloaded = process.execArgv.some((a) => a.includes('tsx'));
  return { code, tsx: preloaded ? 'preloaded' : 'none', jobModule: jobModuleLoad };
}
