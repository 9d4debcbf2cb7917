// jobModuleHash: the sha256 a resume compares covers the job module and the local modules it imports.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { jobModuleHash } from '@weft/engine';
import { createTempDir } from '@weft/testkit';

describe('jobModuleHash', () => {
  it('is the sha256 of the file for a module without local imports, and null for no file URL', async () => {
    await using dir = await createTempDir('weft-module-hash-');
    const file = join(dir.path, 'job.ts');
    const code = "import { defineJob } from '@weft/engine';\nexport default defineJob(() => {});\n";
    await writeFile(file, code);
    assert.equal(await jobModuleHash(pathToFileURL(file).href), createHash('sha256').update(code).digest('hex'));
    assert.equal(await jobModuleHash(undefined), null);
    assert.equal(await jobModuleHash('data:text/javascript,1'), null);
  });

  it('changes when a module it imports by a relative path changes, transitively (.js naming its .ts twin, dynamic imports, re-exports)', async () => {
    await using dir = await createTempDir('weft-module-hash-');
    await mkdir(join(dir.path, 'lib', 'deep'), { recursive: true });
    const job = join(dir.path, 'job.ts');
    await writeFile(job, "import { a } from './lib/a.js';\nconst b = await import('./lib/b.js');\nexport default [a, b];\n");
    await writeFile(join(dir.path, 'lib', 'a.ts'), "export * from './deep/c.js';\nexport const a = 1;\n");
    await writeFile(join(dir.path, 'lib', 'b.ts'), 'export const b = 2;\n');
    await writeFile(join(dir.path, 'lib', 'deep', 'c.ts'), 'export const c = 3;\n');
    const url = pathToFileURL(job).href;
    const before = await jobModuleHash(url);
    assert.equal(await jobModuleHash(url), before, 'the same code hashes the same');
    for (const [file, code] of [['lib/deep/c.ts', 'export const c = 4;\n'], ['lib/b.ts', 'export const b = 5;\n']] as const) {
      const previous = await jobModuleHash(url);
      await writeFile(join(dir.path, file), code);
      assert.notEqual(await jobModuleHash(url), previous, `a change of ${file} changes the hash`);
    }
    await writeFile(join(dir.path, 'unrelated.ts'), 'export const z = 0;\n');
    const now = await jobModuleHash(url);
    await writeFile(join(dir.path, 'unrelated.ts'), 'export const z = 1;\n');
    assert.equal(await jobModuleHash(url), now, 'a file it does not import is not hashed');
  });
});
