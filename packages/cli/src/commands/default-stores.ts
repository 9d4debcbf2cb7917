// Where `weft run` keeps blocking partitions and their metadata when neither a flag nor the environment
// names them — one definition, so `weft gc`, `weft jobs` and `weft ui` look where `weft run` wrote.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The default --store: ./.weft/shuffle under `cwd`, as a file:// URL. */
export function defaultStoreUrl(cwd: string): string {
  return pathToFileURL(resolve(cwd, '.weft', 'shuffle')).href;
}

/** The default --meta: ./.weft/shuffle-meta.db under `cwd`, as a sqlite:// URL. */
export function defaultMetaUrl(cwd: string): string {
  return `sqlite://${resolve(cwd, '.weft', 'shuffle-meta.db')}`;
}
