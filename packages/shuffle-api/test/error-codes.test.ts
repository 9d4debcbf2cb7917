import { strict as assert } from 'node:assert';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ShuffleErrorCode, checkRecord, isShuffleError, isShuffleErrorCode } from '@weft/shuffle-api';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const repoRoot = join(packageDir, '..', '..');
const errorsMd = readFileSync(join(packageDir, 'ERRORS.md'), 'utf8');
const documented = new Set([...errorsMd.matchAll(/^### (SHF_ERR_[A-Z_]+)$/gm)].map((m) => m[1]!));

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.(ts|mjs|js|md)$/.test(name)) out.push(path);
  }
  return out;
}

describe('shuffle error codes', () => {
  it('documents every code in ERRORS.md', () => {
    const undocumented = Object.values(ShuffleErrorCode).filter((code) => !documented.has(code));
    assert.deepEqual(undocumented, [], `undocumented codes: ${undocumented.join(', ')}`);
  });

  it('documents no code that does not exist', () => {
    const unknown = [...documented].filter((code) => !isShuffleErrorCode(code));
    assert.deepEqual(unknown, []);
  });

  it('uses no SHF_ERR_ code anywhere in the repository that is not defined and documented', () => {
    const used = new Map<string, string>();
    for (const file of sourceFiles(join(repoRoot, 'packages'))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/SHF_ERR_[A-Z_]*[A-Z]/g)) used.set(m[0], file);
    }
    const bad = [...used].filter(([code]) => !isShuffleErrorCode(code) || !documented.has(code));
    assert.deepEqual(bad, [], `codes used but not defined and documented: ${bad.map(([c, f]) => `${c} (${f})`).join(', ')}`);
  });

  it('documents an oversized record under the code writers throw for it (SHF_ERR_INVALID_ARGUMENT, field record)', () => {
    const thrown = ((): unknown => {
      try {
        checkRecord(new Uint8Array(11), 10);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    assert.ok(isShuffleError(thrown, 'SHF_ERR_INVALID_ARGUMENT') && thrown.context['field'] === 'record', String(thrown));
    const section = (code: string): string => errorsMd.split(/^### /m).find((s) => s.startsWith(`${code}\n`)) ?? '';
    const row = (code: string): string => errorsMd.split('\n').find((line) => line.startsWith(`| \`${code}\``)) ?? '';
    for (const text of [section('SHF_ERR_INVALID_ARGUMENT'), row('SHF_ERR_INVALID_ARGUMENT')]) assert.match(text, /record larger than (the writer.s )?`maxRecordBytes`/);
    for (const text of [section('SHF_ERR_LIMIT_EXCEEDED'), row('SHF_ERR_LIMIT_EXCEEDED')]) {
      assert.doesNotMatch(text, /exceeded:[^.]*record larger than `maxRecordBytes`/, 'LIMIT_EXCEEDED must not claim oversized records');
    }
  });
});
