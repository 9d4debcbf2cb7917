import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { invalidEngineArgument } from '../errors/engine-error.js';
import type { ExternalFileSystem } from './external-file-system.js';

/** `<scheme>://…` with a scheme of two characters or more (so `C:\dir` stays a local path). */
const URL_PATH = /^([A-Za-z][A-Za-z0-9+.-]+):\/\//;

/** Where a job input or output lives: a local absolute path, or a URL of an external file system. */
export type JobPath = { readonly local: string; readonly external?: undefined } | { readonly local?: undefined; readonly external: ExternalFileSystem; readonly url: string };

/**
 * Resolves a path a job names: `file:///abs` and plain paths (against `cwd`) are local; any other
 * `<scheme>://…` goes to the file system of that scheme, which must be among `fileSystems`
 * (`WEFT_ERR_INVALID_ARGUMENT`, field `fileSystems`, otherwise).
 */
export function resolveJobPath(path: string, cwd: string, fileSystems: readonly ExternalFileSystem[]): JobPath {
  const scheme = URL_PATH.exec(path)?.[1]?.toLowerCase();
  if (scheme === undefined) return { local: resolve(cwd, path) };
  if (scheme === 'file') return { local: fileURLToPath(path) };
  const external = fileSystems.find((fs) => fs.scheme === scheme);
  if (external === undefined) {
    const known = fileSystems.map((fs) => `${fs.scheme}://`).join(', ');
    throw invalidEngineArgument('fileSystems', `${path} needs a file system for ${scheme}:// URLs, and the job was given ${known === '' ? 'none' : `only ${known}`}`, { path });
  }
  return { external, url: path };
}

/** The parent "directory" of an object URL and its name: `s3://b/out/x.tsv` → `s3://b/out`, `x.tsv`. */
function splitUrl(url: string): { parent: string; name: string } {
  const schemeEnd = url.indexOf('://') + 3;
  const slash = url.lastIndexOf('/');
  const name = url.slice(slash + 1);
  if (slash < schemeEnd || name === '') throw invalidEngineArgument('path', `${url} names no object: a sink writes to <scheme>://<bucket>/<key>`, { path: url });
  return { parent: url.slice(0, slash), name };
}

/** Where the attempts of a text sink writing to `path` put their parts: beside the output (`.<name>.weft-<jobId>`). */
export function sinkTempDirOf(path: JobPath, jobId: string): string {
  if (path.local !== undefined) return join(dirname(path.local), `.${basename(path.local)}.weft-${jobId}`);
  const { parent, name } = splitUrl(path.url);
  return `${parent}/.${name}.weft-${jobId}`;
}

/** A file inside a sink's temporary directory. */
export function joinSinkFile(path: JobPath, tempDir: string, name: string): string {
  return path.local !== undefined ? join(tempDir, name) : `${tempDir}/${name}`;
}
