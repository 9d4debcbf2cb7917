import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { EngineError } from '@weft/engine';

/** Reads and parses a JSON file; `WEFT_ERR_INPUT_UNREADABLE` naming the path when it cannot. */
export async function readJsonFile(path: string, cwd: string, what = 'file'): Promise<unknown> {
  const absolute = resolve(cwd, path);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
    throw new EngineError('WEFT_ERR_INPUT_UNREADABLE', `cannot read ${what} ${path}: ${reason}`, { context: { path: absolute }, cause: error });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new EngineError('WEFT_ERR_INPUT_UNREADABLE', `${what} ${path} is not valid JSON: ${(error as Error).message}`, {
      context: { path: absolute },
      cause: error,
    });
  }
}
