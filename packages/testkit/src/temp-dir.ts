import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh directory under the OS temp dir, removed (recursively) by `remove()` or `await using`. */
export interface TempDir extends AsyncDisposable {
  readonly path: string;
  remove(): Promise<void>;
}

export async function createTempDir(prefix = 'weft-test-'): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  let removed: Promise<void> | undefined;
  const remove = (): Promise<void> => (removed ??= rm(path, { recursive: true, force: true, maxRetries: 3 }));
  return { path, remove, [Symbol.asyncDispose]: remove };
}
