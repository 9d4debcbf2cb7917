import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import { resolveJobPath } from '../io/job-paths.js';
import { resolveDirectory } from '../operators/directory-source.js';
import { inputUnreadable, listJobInputFiles } from '../operators/text-file-source.js';
import type { JobPlan } from './job-plan.js';

/**
 * Checks, before any task runs, that every text source of a planned job can read its path: the file (or
 * each file of the directory) exists and is readable. Throws `WEFT_ERR_INPUT_UNREADABLE` naming the first
 * source that cannot (`context.operator`, `context.path`) — bad input, which `weft run` reports with exit
 * code 2 — instead of letting its task fail once the job has started.
 *
 * A `<scheme>://` path is listed through its file system (an object, or objects under the prefix, must be
 * there); one whose scheme has no file system is `WEFT_ERR_INVALID_ARGUMENT` (field `fileSystems`).
 *
 * A path that becomes unreadable after this check still fails its task when it runs (same code), and then
 * the job (`WEFT_ERR_JOB_FAILED`).
 */
export async function checkJobInputs(plan: JobPlan, cwd: string, fileSystems: readonly ExternalFileSystem[] = []): Promise<void> {
  for (const node of plan.logical.nodes) {
    if (node.spec.kind === 'text-sink') resolveJobPath(node.spec.path, cwd, fileSystems);
    if (node.spec.kind === 'directory-source') {
      const dir = resolveDirectory(node.spec.path, cwd);
      try {
        if (!(await stat(dir)).isDirectory()) throw new Error('not a directory (ctx.watchDirectory watches a directory)');
        await access(dir, constants.R_OK | constants.X_OK);
      } catch (error) {
        throw inputUnreadable(node.name, dir, error);
      }
      continue;
    }
    if (node.spec.kind !== 'text-source') continue;
    const path = resolveJobPath(node.spec.path, cwd, fileSystems);
    let files: { path: string }[];
    try {
      files = await listJobInputFiles(path);
    } catch (error) {
      throw inputUnreadable(node.name, path.local ?? path.url, error);
    }
    if (path.external !== undefined) continue;
    for (const file of files) {
      try {
        await access(file.path, constants.R_OK);
      } catch (error) {
        throw inputUnreadable(node.name, file.path, error);
      }
    }
  }
}
