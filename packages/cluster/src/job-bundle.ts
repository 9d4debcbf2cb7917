import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { EngineError } from '@weft/engine';

/** A job module and its local imports, as one ESM file; packages (`@weft/engine`, …) stay imports. */
export interface JobBundle {
  readonly code: string;
  /** Hex sha256 of `code`: its name in the bundle store and in executors' caches. */
  readonly sha256: string;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * Bundles the job module at `moduleUrl` (a file URL) with esbuild: its relative imports inlined
 * (TypeScript compiled), every package import left for the executor to resolve from its own weft
 * installation (so the job uses the executor's engine, not a copy). `WEFT_ERR_INVALID_JOB` when it does
 * not build.
 */
export async function bundleJobModule(moduleUrl: string): Promise<JobBundle> {
  const { build } = await import('esbuild');
  let code: string;
  try {
    const result = await build({
      entryPoints: [fileURLToPath(moduleUrl)],
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      write: false,
      logLevel: 'silent',
      sourcemap: false,
    });
    code = result.outputFiles[0]?.text ?? '';
  } catch (error) {
    throw new EngineError('WEFT_ERR_INVALID_JOB', `cannot bundle the job module ${moduleUrl} for the cluster: ${(error as Error).message}`, { cause: error, context: { field: 'job' } });
  }
  return { code, sha256: sha256Hex(code) };
}
