import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { register } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { sha256Hex } from './job-bundle.js';

/**
 * Module resolution for cached bundles: a bare specifier (`@weft/engine`) imported by a bundle resolves
 * as if imported from this package, i.e. from the executor's own weft installation — the bundle file
 * itself lives in the executor's directory, where no node_modules is.
 */
const HOOKS = `
let dir; let base;
export function initialize(data) { dir = data.dir; base = data.base; }
export async function resolve(specifier, context, next) {
  if (context.parentURL !== undefined && context.parentURL.startsWith(dir) && !/^[./]|^[a-z][a-z0-9+.-]*:/i.test(specifier)) {
    return next(specifier, { ...context, parentURL: base });
  }
  return next(specifier, context);
}`;

const registered = new Set<string>();

function bundlesDirUrl(dir: string): string {
  return pathToFileURL(join(dir, 'bundles')).href + '/';
}

/**
 * A `--import` for the worker processes of a task executor whose directory is `dir`: it registers the same
 * resolution in them, so the bundles they load find the executor's weft packages.
 */
export function bundleResolutionImport(dir: string): string {
  const code = `import { register } from 'node:module';\nregister(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)}, { data: ${JSON.stringify({ dir: bundlesDirUrl(dir), base: import.meta.url })} });\n`;
  return `data:text/javascript,${encodeURIComponent(code)}`;
}

/**
 * An executor's on-disk cache of job bundles, by sha256, under `<dir>/bundles/`. `path(sha, fetch)`
 * returns the file of a cached bundle, else fetches it, checks its hash and writes it (atomically, by
 * rename), so a bundle is fetched once per executor. Undefined when the store does not have it or its
 * content does not match its hash.
 */
export class BundleCache {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = join(dir, 'bundles');
    const dirUrl = bundlesDirUrl(dir);
    if (!registered.has(dirUrl)) {
      registered.add(dirUrl);
      register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, { data: { dir: dirUrl, base: import.meta.url } });
    }
  }

  async path(sha256: string, fetch: (sha256: string) => Promise<string | undefined>): Promise<string | undefined> {
    if (!/^[0-9a-f]{64}$/.test(sha256)) return undefined;
    const file = join(this.#dir, `${sha256}.mjs`);
    const cached = await readFile(file, 'utf8').catch(() => undefined);
    if (cached !== undefined && sha256Hex(cached) === sha256) return file;
    const code = await fetch(sha256);
    if (code === undefined || sha256Hex(code) !== sha256) return undefined;
    await mkdir(this.#dir, { recursive: true });
    const temp = `${file}.${process.pid}.tmp`;
    await writeFile(temp, code);
    await rename(temp, file);
    return file;
  }
}
