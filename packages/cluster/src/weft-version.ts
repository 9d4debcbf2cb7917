import { readFileSync } from 'node:fs';

/**
 * The weft version of this installation (this package's version: the packages are released together).
 * A job master refuses executors of another version, and an executor refuses their deployments.
 */
export const WEFT_VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
