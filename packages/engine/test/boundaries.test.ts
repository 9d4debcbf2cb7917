import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const engine = fileURLToPath(new URL('..', import.meta.url));
const FORBIDDEN = /@weft\/shuffle-(memory|remote)/;

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.(ts|mts|js|mjs)$/.test(name)) out.push(path);
  }
  return out;
}

describe('engine boundaries (docs/DESIGN.md: the engine depends on shuffle-api only)', () => {
  it('no source file in packages/engine/src imports @weft/shuffle-memory or @weft/shuffle-remote', () => {
    const files = sourceFiles(join(engine, 'src'));
    assert.ok(files.length > 10, 'the scan sees the sources');
    const offenders = files.filter((file) => {
      const code = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
      return [...code.matchAll(/(?:from\s+|import\s*\(\s*|import\s+|require\s*\(\s*)['"]([^'"]+)['"]/g)].some((m) => FORBIDDEN.test(m[1] as string));
    });
    assert.deepEqual(offenders.map((f) => relative(engine, f)), []);
  });

  it('packages/engine/package.json depends on @weft/shuffle-api and no shuffle implementation', () => {
    const pkg = JSON.parse(readFileSync(join(engine, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    const all = { ...pkg['dependencies'], ...pkg['peerDependencies'], ...pkg['optionalDependencies'], ...pkg['devDependencies'] };
    assert.ok('@weft/shuffle-api' in (pkg['dependencies'] ?? {}));
    assert.deepEqual(Object.keys(all).filter((name) => FORBIDDEN.test(name)), []);
  });
});
