#!/usr/bin/env node
// Bundles the single-page app with esbuild: app/src/main.ts → main.js (one ES module, no CDN, works offline),
// plus index.html. `bundleApp()` returns the files in memory; run as a script (`npm run build -w @weft/ui`)
// it writes them to app/dist/, which the UI server serves when it exists.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const appDir = dirname(fileURLToPath(import.meta.url));
export const APP_ENTRY = join(appDir, 'src', 'main.ts');
export const APP_INDEX_HTML = join(appDir, 'index.html');
export const APP_DIST = join(appDir, 'dist');

/** @param {{ minify?: boolean, sourcemap?: boolean }} [options] */
export async function bundleApp(options = {}) {
  const result = await build({
    entryPoints: [APP_ENTRY],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    minify: options.minify ?? true,
    sourcemap: options.sourcemap === false ? false : 'inline',
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  const mainJs = result.outputFiles[0]?.text;
  if (mainJs === undefined) throw new Error('esbuild produced no output for the UI app');
  return { 'index.html': await readFile(APP_INDEX_HTML, 'utf8'), 'main.js': mainJs };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = await bundleApp();
  await mkdir(APP_DIST, { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(join(APP_DIST, name), text);
  process.stdout.write(`ui app: ${Object.keys(files).map((n) => join('app/dist', n)).join(', ')} (${Math.round(files['main.js'].length / 1024)} KiB of JS)\n`);
}
