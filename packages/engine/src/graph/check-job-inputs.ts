import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { resolve } from 'node:path';
import { inputUnreadable, listInputFiles } from '../operators/text-file-source.js';
import type { JobPlan } from './job-plan.js';

/**
 * Checks, before any task runs, that every text source of a planned job can read its path: the file (or
 * each file of the directory) exists and is readable. Throws `WEFT_ERR_INPUT_UNREADABLE` naming the first
 * source that cannot (`context.operator`, `context.path`) — bad input, which `weft run` reports with exit
 * code 2 — instead of letting its task fail once the job has started.
 *
 * A path that becomes unreadable after this check still fails its task when it runs (same code), and then
 * the job (`WEFT_ERR_JOB_FAILED`).
 */
export async function checkJobInputs(plan: JobPlan, cwd: string): Promise<void> {
  for (const node of plan.logical.nodes) {
    if (node.spec.kind !== 'text-source') continue;
    const path = resolve(cwd, node.spec.path);
    let files: { path: string }[];
    try {
      files = await listInputFiles(path);
    } catch (error) {
      throw inputUnreadable(node.name, path, error);
    }
    for (const file of files) {
      try {
        await access(file.path, constants.R_OK);
      } catch (error) {
        throw inputUnreadable(node.name, file.path, error);
      }
    }
  }
}
