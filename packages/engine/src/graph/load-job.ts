import { basename, extname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type JobDefinition, isJobDefinition } from '../api/define-job.js';
import { DEFAULT_EXCHANGE_MODE, type ExchangeMode, EXCHANGE_MODES, isExchangeMode } from '../api/exchange-mode.js';
import { JobArgs } from '../api/job-args.js';
import { JobContext } from '../api/job-context.js';
import { invalidJob, LogicalGraph } from '../api/logical-graph.js';
import { EngineError, isEngineError } from '../errors/engine-error.js';
import type { ResolvedAdaptiveBatchOptions } from '../adaptive/adaptive-batch-options.js';
import { adaptivePresets, type PlanAdaptivity } from './adaptive-presets.js';
import { buildJobPlan } from './build-job-plan.js';
import { checkJobInputs } from './check-job-inputs.js';
import { checkUnboundedSinks } from './check-unbounded-sinks.js';
import type { JobPlan } from './job-plan.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';

export interface LoadJobRequest {
  /** A job module (path or file URL; its default export is a `defineJob` result), or a definition. */
  readonly job: string | URL | JobDefinition;
  readonly args?: readonly string[];
  readonly parallelism: number;
  /** Overrides the job's own exchange mode. */
  readonly exchangeMode?: ExchangeMode;
  /** The exchange mode of a job that names none (of its own, nor `exchangeMode`). @defaultValue DEFAULT_EXCHANGE_MODE */
  readonly defaultExchangeMode?: ExchangeMode;
  /** Relative module and input paths resolve against this. @defaultValue process.cwd() */
  readonly cwd?: string;
  /**
   * Check that every text source can read its path once the job is planned (`checkJobInputs`), so a
   * missing input is refused before anything runs. Off for a plan that only is shown or that a worker
   * rebuilds. @defaultValue true
   */
  readonly checkInputs?: boolean;
  /** Where `<scheme>://` inputs live, for `checkInputs` (and an adaptive plan's source sizes). @defaultValue [] */
  readonly fileSystems?: readonly ExternalFileSystem[];
  /**
   * Plan adaptively (`--parallelism auto`, BuildJobPlanRequest.adaptive): with `presets` as given (a
   * worker rebuilding the job master's plan), else computed here from the job's inputs (adaptivePresets).
   * @defaultValue none: every parallelism is fixed at planning
   */
  readonly adaptive?: { readonly options: ResolvedAdaptiveBatchOptions; readonly presets?: Readonly<Record<string, number>> };
}

export interface LoadedJob {
  readonly definition: JobDefinition;
  /** The module's file URL, when the job came from a module (workers load it by this). */
  readonly moduleUrl: string | undefined;
  readonly plan: JobPlan;
}

/**
 * The environment variable naming job modules compiled ahead of time: a JSON object from a job module's
 * file URL to the URL of plain JavaScript built from it (the CLI, from built code, bundles a TypeScript
 * job with esbuild), which is imported in its place. Set in a process, it is inherited by the workers it
 * forks. The job keeps its own URL everywhere else.
 */
export const JOB_MODULE_BUILDS_ENV = 'WEFT_JOB_MODULE_BUILDS';

/**
 * The URL to import for job module `moduleUrl`: its build under JOB_MODULE_BUILDS_ENV, or itself. A build
 * carries an inline source map: source maps are switched on (for modules loaded from now on) so a user
 * function's stack names the job's own file and line, as under tsx.
 */
export function jobModuleImportUrl(moduleUrl: string): string {
  const builds = process.env[JOB_MODULE_BUILDS_ENV];
  if (builds === undefined || builds === '') return moduleUrl;
  let built: unknown;
  try {
    built = (JSON.parse(builds) as Record<string, unknown>)[moduleUrl];
  } catch {
    return moduleUrl;
  }
  if (typeof built !== 'string') return moduleUrl;
  process.setSourceMapsEnabled(true);
  return built;
}

/** The file URL of a job module given as a path (relative to `cwd`) or URL. */
export function jobModuleUrl(job: string | URL, cwd: string): string {
  if (job instanceof URL) return job.href;
  if (/^file:\/\//.test(job)) return job;
  return pathToFileURL(isAbsolute(job) ? job : resolve(cwd, job)).href;
}

/**
 * Loads a job — imports its module when given a path — runs its build function with the arguments and
 * default parallelism, plans it, and checks its inputs. Throws `WEFT_ERR_INVALID_JOB` (module without a
 * `defineJob` default export, build function that throws, invalid graph) and `WEFT_ERR_INPUT_UNREADABLE`
 * (a text source's path is missing or unreadable; unless `checkInputs` is false).
 */
export async function loadJob(request: LoadJobRequest): Promise<LoadedJob> {
  const cwd = request.cwd ?? process.cwd();
  let definition: JobDefinition;
  let moduleUrl: string | undefined;
  let name: string;
  if (typeof request.job === 'string' || request.job instanceof URL) {
    moduleUrl = jobModuleUrl(request.job, cwd);
    let module: Record<string, unknown>;
    try {
      module = (await import(jobModuleImportUrl(moduleUrl))) as Record<string, unknown>;
    } catch (error) {
      throw new EngineError('WEFT_ERR_INVALID_JOB', `cannot load job module ${String(request.job)}: ${(error as Error).message}`, {
        cause: error,
        context: { field: 'job', path: moduleUrl },
      });
    }
    const exported = module['default'];
    if (!isJobDefinition(exported)) {
      throw invalidJob('job', `${String(request.job)} has no default export made by defineJob (export default defineJob((ctx) => …))`);
    }
    definition = exported;
    const file = new URL(moduleUrl).pathname;
    name = definition.options.name ?? basename(file, extname(file));
  } else if (isJobDefinition(request.job)) {
    definition = request.job;
    name = definition.options.name ?? 'job';
  } else {
    throw invalidJob('job', 'expected a job module path or a defineJob(...) result');
  }
  const exchangeMode = request.exchangeMode ?? definition.options.exchangeMode ?? request.defaultExchangeMode ?? DEFAULT_EXCHANGE_MODE;
  if (!isExchangeMode(exchangeMode)) throw invalidJob('exchangeMode', `unknown exchange mode ${JSON.stringify(exchangeMode)}; expected one of ${EXCHANGE_MODES.join(', ')}`);
  const parallelism = request.parallelism;
  if (!Number.isInteger(parallelism) || parallelism < 1) throw invalidJob('parallelism', `expected an integer >= 1, got ${String(parallelism)}`);
  const graph = new LogicalGraph({ splitSkewedAggregations: request.adaptive?.options.skewedAggregation === 'auto' });
  const context = new JobContext(graph, new JobArgs(request.args ?? []), parallelism);
  try {
    await definition.build(context);
  } catch (error) {
    if (isEngineError(error, 'WEFT_ERR_INVALID_JOB')) throw error;
    throw new EngineError('WEFT_ERR_INVALID_JOB', `the build function of job ${JSON.stringify(name)} threw: ${(error as Error)?.message ?? String(error)}`, {
      cause: error,
      context: { field: 'build' },
    });
  }
  checkUnboundedSinks(graph, exchangeMode);
  let adaptive: PlanAdaptivity | undefined;
  if (request.adaptive !== undefined) {
    const options = request.adaptive.options;
    adaptive = { options, presets: request.adaptive.presets ?? (await adaptivePresets(graph, options, cwd, request.fileSystems ?? [])) };
  }
  const plan = buildJobPlan({ graph, name, exchangeMode, defaultParallelism: parallelism, ...(adaptive === undefined ? {} : { adaptive }) });
  if (request.checkInputs ?? true) await checkJobInputs(plan, cwd, request.fileSystems ?? []);
  return { definition, moduleUrl, plan };
}
