import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EngineError, EngineErrorCode, isEngineError } from '@weft/engine';

const packages = fileURLToPath(new URL('../../', import.meta.url));
const errorsMd = readFileSync(join(packages, 'engine', 'ERRORS.md'), 'utf8');
const documented = new Set([...errorsMd.matchAll(/^## (WEFT_ERR_[A-Z0-9_]+)\s*$/gm)].map((m) => m[1] as string));

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.(ts|js|mjs)$/.test(name)) out.push(path);
  }
  return out;
}

describe('engine error codes', () => {
  it('documents every WEFT_ERR_* code used in packages/engine/src and packages/cli/src in ERRORS.md', () => {
    const used = new Map<string, string>();
    for (const dir of [join(packages, 'engine', 'src'), join(packages, 'cli', 'src')]) {
      for (const file of sourceFiles(dir)) {
        for (const m of readFileSync(file, 'utf8').matchAll(/WEFT_ERR_[A-Z0-9_]*[A-Z0-9]/g)) used.set(m[0], file);
      }
    }
    assert.ok(used.size >= Object.keys(EngineErrorCode).length, 'the scan finds the codes');
    const undocumented = [...used].filter(([code]) => !documented.has(code)).map(([code, file]) => `${code} (${file})`);
    assert.deepEqual(undocumented, [], 'add a "## CODE" section to packages/engine/ERRORS.md');
  });

  it('documents exactly the codes EngineErrorCode declares, with some explanation each', () => {
    assert.deepEqual([...documented].sort(), Object.values(EngineErrorCode).sort());
    for (const code of documented) {
      const section = errorsMd.split(`## ${code}`)[1]?.split('\n## ')[0] ?? '';
      assert.ok(section.trim().length > 40, `${code} has a real explanation`);
    }
  });

  it('recognises engine errors by code, not by class', () => {
    const error = new EngineError('WEFT_ERR_INVALID_TOPOLOGY', 'bad', { context: { field: 'edges[0]' } });
    assert.equal(error.field, 'edges[0]');
    assert.ok(isEngineError(error, 'WEFT_ERR_INVALID_TOPOLOGY'));
    assert.ok(isEngineError({ code: 'WEFT_ERR_USAGE', message: 'from another copy' }));
    assert.ok(!isEngineError({ code: 'SHF_ERR_CLOSED' }));
    assert.ok(!isEngineError(error, 'WEFT_ERR_USAGE'));
  });
});
