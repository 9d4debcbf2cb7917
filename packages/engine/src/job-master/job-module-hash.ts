import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `from './x'`, `import './x'`, `import('./x')` with a relative specifier (packages are not followed). */
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)(['"])(\.{1,2}\/[^'"\n]+)\1/g;
/** What a `.js` specifier may name in TypeScript sources (as tsx resolves it). */
const SOURCE_TWINS: Record<string, readonly string[]> = { '.js': ['.ts', '.tsx'], '.mjs': ['.mts'], '.cjs': ['.cts'], '.jsx': ['.tsx'] };

function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}

/** The file a relative specifier names, as Node or tsx would find it; undefined when none is found. */
function resolveLocal(from: string, specifier: string): string | undefined {
  const target = resolve(dirname(from), specifier.split(/[?#]/)[0] as string);
  if (isFile(target)) return target;
  const ext = /\.[cm]?jsx?$/.exec(target)?.[0];
  if (ext !== undefined) for (const twin of SOURCE_TWINS[ext] ?? []) if (isFile(target.slice(0, -ext.length) + twin)) return target.slice(0, -ext.length) + twin;
  for (const suffix of ['.ts', '.js', '/index.ts', '/index.js']) if (isFile(target + suffix)) return target + suffix;
  return undefined;
}

/**
 * sha256 (hex) of a job module's code: the module file and, transitively, every local module it imports
 * by a relative specifier (`./lib/x.js`) — so a resume whose helper module changed is refused, not run
 * half with the old code and half with the new. A module without local imports hashes as its file alone
 * (what weft logged before). Package imports are not followed. Null when `moduleUrl` is not a file URL.
 */
export async function jobModuleHash(moduleUrl: string | undefined): Promise<string | null> {
  if (moduleUrl === undefined || !moduleUrl.startsWith('file:')) return null;
  const entry = fileURLToPath(moduleUrl);
  const contents = new Map<string, Buffer>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (contents.has(file)) continue;
    const bytes = await readFile(file);
    contents.set(file, bytes);
    for (const match of bytes.toString('utf8').matchAll(RELATIVE_IMPORT)) {
      const found = resolveLocal(file, match[2] as string);
      if (found !== undefined && !contents.has(found)) pending.push(found);
    }
  }
  if (contents.size === 1) return createHash('sha256').update(contents.get(entry) as Buffer).digest('hex');
  const hash = createHash('sha256');
  const base = dirname(entry);
  for (const file of [...contents.keys()].sort()) {
    hash.update(`${relative(base, file)}\0${createHash('sha256').update(contents.get(file) as Buffer).digest('hex')}\n`);
  }
  return hash.digest('hex');
}
