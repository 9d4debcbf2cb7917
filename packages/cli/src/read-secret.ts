import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { CliIo } from './command.js';
import { usageError } from './parse-command-args.js';

/** The shared secret: the `--secret-file` contents (trimmed), else $WEFT_SHUFFLE_SECRET; a usage error when neither. */
export async function readSecret(command: string, secretFile: string | undefined, io: CliIo): Promise<string> {
  if (secretFile !== undefined) {
    const path = resolve(io.cwd, secretFile);
    try {
      return (await readFile(path, 'utf8')).trim();
    } catch (error) {
      throw usageError(command, `--secret-file: cannot read ${path}: ${(error as Error).message}`, error);
    }
  }
  const secret = io.env['WEFT_SHUFFLE_SECRET'];
  if (secret === undefined || secret === '') throw usageError(command, 'no shared secret: set WEFT_SHUFFLE_SECRET or give --secret-file <path>');
  return secret;
}
