import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';

/** Builds a throwaway repository layout from `files` and runs the lint on it. */
function lint(files: Record<string, string>): { status: number | null; stderr: string } {
  const root = mkdtempSync(join(tmpdir(), 'weft-lint-'));
  try {
    const packages: Record<string, string> = {
      'packages/shuffle-api/package.json': JSON.stringify({ name: '@weft/shuffle-api', exports: { '.': {}, './testing': {} } }),
      'packages/engine/package.json': JSON.stringify({ name: '@weft/engine', exports: { '.': {} } }),
      'packages/shuffle-memory/package.json': JSON.stringify({ name: '@weft/shuffle-memory', exports: { '.': {} } }),
    };
    for (const [path, text] of Object.entries({ ...packages, ...files })) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    const result = spawnSync(process.execPath, ['scripts/lint-imports.mjs', '--root', root], { encoding: 'utf8' });
    return { status: result.status, stderr: result.stderr };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

describe('import lint', () => {
  it('passes a clean layout', () => {
    const r = lint({
      'packages/engine/src/a.ts': "import { x } from './b.js';\nimport type { Y } from '@weft/shuffle-api';\n",
      'packages/engine/src/b.ts': 'export const x = 1;\n',
    });
    assert.equal(r.status, 0, r.stderr);
  });

  it('fails on a runtime import cycle, but not on a type-only one', () => {
    const cycle = lint({
      'packages/engine/src/a.ts': "import { b } from './b.js';\nexport const a = b;\n",
      'packages/engine/src/b.ts': "import { a } from './a.js';\nexport const b = 1;\n",
    });
    assert.equal(cycle.status, 1);
    assert.match(cycle.stderr, /import cycle: .*a\.ts.*b\.ts|import cycle: .*b\.ts.*a\.ts/);
    const typeOnly = lint({
      'packages/engine/src/a.ts': "import type { B } from './b.js';\nexport const a = 1;\n",
      'packages/engine/src/b.ts': "import { a } from './a.js';\nexport type B = typeof a;\n",
    });
    assert.equal(typeOnly.status, 0, typeOnly.stderr);
  });

  it('fails on a cycle between packages through imports by name, naming the cycle', () => {
    const pkg = (name: string, exports: Record<string, unknown>) => JSON.stringify({ name, exports });
    const withSources = {
      'packages/a/package.json': pkg('@weft/a', { '.': { source: './src/index.ts' }, './extra': { source: './src/extra.ts' } }),
      'packages/b/package.json': pkg('@weft/b', { '.': { source: './src/index.ts' } }),
    };
    const layouts: Record<string, string>[] = [
      // straight through the packages' main entries
      { ...withSources, 'packages/a/src/index.ts': "import { b } from '@weft/b';\nexport const a = b;\n", 'packages/b/src/index.ts': "import { a } from '@weft/a';\nexport const b = a;\n" },
      // through a subpath export, resolved to the file its `source` names
      {
        ...withSources,
        'packages/a/src/index.ts': 'export const a = 1;\n',
        'packages/a/src/extra.ts': "import { b } from '@weft/b';\nexport const extra = b;\n",
        'packages/b/src/index.ts': "import { extra } from '@weft/a/extra';\nexport const b = extra;\n",
      },
      // exports without a `source`: the package-level check still sees it
      {
        'packages/a/package.json': pkg('@weft/a', { '.': {} }),
        'packages/b/package.json': pkg('@weft/b', { '.': {} }),
        'packages/a/src/index.ts': "import { b } from '@weft/b';\nexport const a = b;\n",
        'packages/b/src/index.ts': "import { a } from '@weft/a';\nexport const b = a;\n",
      },
      // a type-only import still makes a package depend on another (it needs its types to build)
      { ...withSources, 'packages/a/src/index.ts': "import type { B } from '@weft/b';\nexport const a: B = 1;\n", 'packages/b/src/index.ts': "import { a } from '@weft/a';\nexport const b = a;\nexport type B = number;\n" },
    ];
    for (const files of layouts) {
      const r = lint(files);
      assert.equal(r.status, 1, `should refuse ${JSON.stringify(files)}`);
      assert.match(r.stderr, /package import cycle: (@weft\/a -> @weft\/b -> @weft\/a|@weft\/b -> @weft\/a -> @weft\/b) \(packages\/[ab]\/src\/[a-z]+\.ts imports @weft\/[ab]; packages\/[ab]\/src\/[a-z]+\.ts imports @weft\/[ab]\)/, r.stderr);
    }
    // with sources, the file-level cycle is named too
    const r = lint(layouts[1]!);
    assert.match(r.stderr, /import cycle: packages\/(a\/src\/extra\.ts -> packages\/b\/src\/index\.ts -> packages\/a\/src\/extra\.ts|b\/src\/index\.ts -> packages\/a\/src\/extra\.ts -> packages\/b\/src\/index\.ts)/, r.stderr);
  });

  it("fails on a runtime cycle through a package's own name, but not on a type-only one", () => {
    const engine = { 'packages/engine/package.json': JSON.stringify({ name: '@weft/engine', exports: { '.': { source: './src/index.ts' } } }) };
    const runtime = lint({
      ...engine,
      'packages/engine/src/index.ts': "export { a } from './a.js';\n",
      'packages/engine/src/a.ts': "import { b } from '@weft/engine';\nexport const a = 1;\nexport const c = () => b;\n",
    });
    assert.equal(runtime.status, 1);
    assert.match(runtime.stderr, /import cycle: .*index\.ts.*a\.ts|import cycle: .*a\.ts.*index\.ts/);
    const typeOnly = lint({
      ...engine,
      'packages/engine/src/index.ts': "export { a } from './a.js';\n",
      'packages/engine/src/a.ts': "import type { B } from '@weft/engine';\nexport const a = 1;\n",
    });
    assert.equal(typeOnly.status, 0, typeOnly.stderr);
  });

  it("passes packages whose tests import a package that depends on them (tests are not the package's code)", () => {
    const r = lint({
      'packages/shuffle-api/src/index.ts': 'export const x = 1;\n',
      'packages/shuffle-api/test/x.test.ts': "import { y } from '@weft/shuffle-memory';\n",
      'packages/shuffle-memory/src/index.ts': "import { x } from '@weft/shuffle-api';\nexport const y = x;\n",
    });
    assert.equal(r.status, 0, r.stderr);
  });

  it('fails when the engine imports a shuffle implementation', () => {
    const r = lint({ 'packages/engine/src/a.ts': "import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';\n" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /the engine imports a shuffle implementation/);
  });

  it("fails on deep imports into another package's internals", () => {
    for (const specifier of ['@weft/shuffle-api/src/ids.js', '../../shuffle-api/src/ids.js', '@weft/shuffle-memory/buffer-pool']) {
      const r = lint({ 'packages/engine/src/a.ts': `import { x } from '${specifier}';\n`, 'packages/shuffle-api/src/ids.ts': 'export const x = 1;\n' });
      assert.equal(r.status, 1, `should refuse ${specifier}`);
    }
  });

  it("fails on any file outside a package that imports a package's files by path, wherever it lives", () => {
    const cases: [string, string][] = [
      ['examples/custom.ts', '../packages/shuffle-api/src/ids.js'],
      ['examples/test/custom.test.ts', '../../packages/shuffle-memory/src/buffer-pool.js'],
      ['bench/exchange.bench.ts', '../packages/shuffle-memory/src/index.js'],
      ['bench/deep/x.bench.ts', '../../packages/shuffle-api/src'],
      ['scripts/tool.mjs', '../packages/engine/src/a.js'],
      ['tool.mjs', './packages/shuffle-api/src/ids.js'],
      // a path into a package is refused even when no file is there (yet)
      ['examples/typo.ts', '../packages/shuffle-api/src/no-such-file.js'],
      // a package's own bench/ importing a sibling package by path
      ['packages/shuffle-memory/bench/x.bench.ts', '../../shuffle-api/src/ids.js'],
    ];
    for (const [from, specifier] of cases) {
      const r = lint({
        [from]: `import { x } from '${specifier}';\n`,
        'packages/shuffle-api/src/ids.ts': 'export const x = 1;\n',
        'packages/shuffle-api/src/index.ts': "export * from './ids.js';\n",
        'packages/shuffle-memory/src/index.ts': 'export const x = 1;\n',
        'packages/shuffle-memory/src/buffer-pool.ts': 'export const x = 1;\n',
        'packages/engine/src/a.ts': 'export const x = 1;\n',
      });
      assert.equal(r.status, 1, `should refuse ${from} importing ${specifier}`);
      assert.match(r.stderr, /a path into @weft\/[a-z-]+.*; import @weft\/[a-z-]+ by name/, r.stderr);
    }
    // dynamic imports and re-exports count too
    for (const text of ["const m = await import('../packages/shuffle-api/src/ids.js');\n", "export { x } from '../packages/shuffle-api/src/ids.js';\n"]) {
      const r = lint({ 'examples/dyn.ts': text, 'packages/shuffle-api/src/ids.ts': 'export const x = 1;\n' });
      assert.equal(r.status, 1, `should refuse ${text.trim()}`);
    }
  });

  it('passes files outside packages that import packages by name and their own folder by path', () => {
    const r = lint({
      'examples/custom.ts': "import { x } from '@weft/shuffle-api';\nimport { y } from './support/y.js';\n",
      'examples/support/y.ts': 'export const y = 1;\n',
      'bench/a.bench.ts': "import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';\nimport { z } from './z.js';\n",
      'bench/z.ts': 'export const z = 1;\n',
      'packages/shuffle-memory/bench/x.bench.ts': "import { BufferPool } from '../src/buffer-pool.js';\nimport { x } from '@weft/shuffle-api';\n",
      'packages/shuffle-memory/src/buffer-pool.ts': 'export class BufferPool {}\n',
      'packages/shuffle-api/src/index.ts': 'export const x = 1;\n',
    });
    assert.equal(r.status, 0, r.stderr);
  });

  it('fails when shuffle-api imports any package', () => {
    const r = lint({ 'packages/shuffle-api/src/a.ts': "import pino from 'pino';\n" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /has no dependencies/);
  });
});
