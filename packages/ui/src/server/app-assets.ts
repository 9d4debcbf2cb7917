import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One file the server answers with. */
export interface AppAsset {
  readonly body: Buffer;
  readonly contentType: string;
}

/**
 * Where the single-page app is found (the convention with the app's build, packages/ui/README.md):
 * `<appDir>/dist/` when it exists (`index.html` at `GET /`, every other file at `GET /app/<file>`), else
 * `<appDir>/src/main.ts` bundled in memory with esbuild (at `/app/main.js`) and `<appDir>/index.html`;
 * else a placeholder page that says the app is not built. Nothing is read or built until the first request
 * for a page (a job run with `--ui` that nobody watches pays nothing), then once.
 */
export interface AppAssets {
  /** The page served at `/` and at every path that is not an API, metrics or asset path (client-side routes). */
  index(): Promise<AppAsset>;
  /** `/app/<path>`, or undefined when there is no such file. */
  asset(path: string): Promise<AppAsset | undefined>;
}

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

const typeOf = (path: string): string => TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';

/** The esbuild module is loaded only to bundle the app in memory (a source checkout without app/dist). */
const ESBUILD_MODULE = 'esbuild';

/** packages/ui/app, found from this module (src/server/ in a checkout, dist/ once built). */
export function defaultAppDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const pj = join(dir, 'package.json');
    if (existsSync(pj) && (JSON.parse(readFileSync(pj, 'utf8')) as { name?: unknown }).name === '@weft/ui') return join(dir, 'app');
    dir = dirname(dir);
  }
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'app');
}

function placeholder(reason: string): AppAsset {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Weft</title></head><body><h1>Weft UI</h1><p>The web app is not built here (${reason.replace(/[<>&]/g, '')}). The JSON API answers at <a href="/api/jobs">/api/jobs</a>.</p></body></html>\n`;
  return { body: Buffer.from(html), contentType: TYPES['.html'] as string };
}

type Loaded = { readonly index: AppAsset; readonly files: ReadonlyMap<string, AppAsset> | undefined; readonly dist: string | undefined };

/** The app under `appDir` (default: packages/ui/app). */
export function appAssets(appDir: string = defaultAppDir()): AppAssets {
  let loaded: Promise<Loaded> | undefined;
  const load = (): Promise<Loaded> => (loaded ??= loadApp(appDir));
  return {
    async index() {
      return (await load()).index;
    },
    async asset(path) {
      const app = await load();
      if (app.files !== undefined) return app.files.get(path);
      if (app.dist === undefined) return undefined;
      const file = resolve(app.dist, path);
      if (!file.startsWith(app.dist + sep)) return undefined; // no way out of dist/
      try {
        return { body: await readFile(file), contentType: typeOf(file) };
      } catch {
        return undefined;
      }
    },
  };
}

async function loadApp(appDir: string): Promise<Loaded> {
  const dist = resolve(appDir, 'dist');
  if (existsSync(join(dist, 'index.html'))) return { index: { body: await readFile(join(dist, 'index.html')), contentType: TYPES['.html'] as string }, files: undefined, dist };
  const entry = join(appDir, 'src', 'main.ts');
  const html = join(appDir, 'index.html');
  if (!existsSync(entry) || !existsSync(html)) return { index: placeholder(`neither ${dist} nor ${entry} exists`), files: new Map(), dist: undefined };
  try {
    const { build } = (await import(ESBUILD_MODULE)) as typeof import('esbuild');
    const result = await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'browser', target: ['es2022'], write: false, outdir: '/app', logLevel: 'silent', legalComments: 'none' });
    const files = new Map<string, AppAsset>();
    for (const out of result.outputFiles) files.set(out.path.slice('/app/'.length), { body: Buffer.from(out.contents), contentType: typeOf(out.path) });
    return { index: { body: await readFile(html), contentType: TYPES['.html'] as string }, files, dist: undefined };
  } catch (error) {
    return { index: placeholder(`bundling ${entry} failed: ${(error as Error).message.split('\n')[0]}`), files: new Map(), dist: undefined };
  }
}
