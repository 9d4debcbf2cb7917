import { createHash } from 'node:crypto';

/**
 * Where fileCommitSink stages: a local directory's in-progress files `<dir>/.in-progress/<tag>-<name>`
 * (committed, `<dir>/<name>`); on a `<scheme>://` directory, the markers of its uploads under the same name.
 */
export const IN_PROGRESS_DIR = '.in-progress';

/**
 * The prefix of the in-progress files (or markers) of one sink of one job (`<tag>-`, 16 hex digits of a
 * SHA-256 of the job id and the sink's name): what a restarted subtask (abortLingering) and `weft gc`
 * find a job's staging by, in a directory other jobs may write too.
 */
export function inProgressPrefix(jobId: string, operatorName: string): string {
  return `${createHash('sha256').update(`${jobId}\n${operatorName}`).digest('hex').slice(0, 16)}-`;
}
