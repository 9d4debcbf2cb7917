import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spillFailed } from './spill-failed.js';

/** `weft-spill-<12 hex digits of sha256(job id)>-`: what every spill directory of the job's tasks starts with. */
export function jobSpillPrefix(jobId: string): string {
  // every task of the job asks as it starts: the hash is computed once (a sha256 is ~0.05 ms of a restart)
  if (lastPrefix?.jobId !== jobId) lastPrefix = { jobId, prefix: `weft-spill-${createHash('sha256').update(jobId).digest('hex').slice(0, 12)}-` };
  return lastPrefix.prefix;
}

let lastPrefix: { readonly jobId: string; readonly prefix: string } | undefined;

/**
 * Removes the spill directories of `jobId`'s tasks under `root` (default the system's temp directory):
 * what tasks killed with their process (SIGKILL of the whole run, a crash) left. Returns how many.
 */
export function removeJobSpillDirs(jobId: string, root: string = tmpdir()): number {
  const prefix = jobSpillPrefix(jobId);
  let entries: string[];
  try {
    entries = readdirSync(root);
  } catch {
    return 0; // no spill root yet: nothing spilled there
  }
  let removed = 0;
  for (const name of entries) {
    if (!name.startsWith(prefix)) continue;
    rmSync(join(root, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}

/**
 * The spill files of one task attempt: a directory `weft-spill-<job>-<attempt>-` (job: jobSpillPrefix) plus six random characters (mkdtemp) under `root` (the
 * system's temp directory by default), made when the first file is asked for. Operators own their files
 * and remove them when done with them; `close()` removes the directory and whatever is still in it —
 * the task calls it after success, failure and cancellation alike. Synchronous: operators spill from
 * their (synchronous) `collect`.
 */
export class SpillDirectory {
  #root: string | undefined;
  readonly #prefix: string;
  #dir: string | undefined;
  #files = 0;
  #closed = false;
  /** Spill files created so far (a counter for tests and summaries). */
  filesCreated = 0;

  constructor(options: { readonly root?: string | undefined; readonly name: string; readonly jobId?: string | undefined }) {
    this.#root = options.root;
    this.#prefix = `${options.jobId === undefined ? 'weft-spill-' : jobSpillPrefix(options.jobId)}${options.name.replace(/[^A-Za-z0-9_.-]+/g, '_')}-`;
  }

  /** Where the directory is made: the root given, else the system's temp directory (asked once, when first needed: most tasks never spill, and `tmpdir()` reads the environment each time). */
  get root(): string {
    this.#root ??= tmpdir();
    return this.#root;
  }

  /** The directory, when a file was made in it (and it was not closed). */
  get path(): string | undefined {
    return this.#dir;
  }

  /** A fresh path for a spill file of `operator` (nothing is created at it). */
  newFile(operator: string): string {
    if (this.#closed) throw new Error(`unreachable: spill directory of ${this.#prefix} used after close`);
    if (this.#dir === undefined) {
      const root = this.root;
      try {
        mkdirSync(root, { recursive: true });
        this.#dir = mkdtempSync(join(root, this.#prefix));
      } catch (error) {
        throw spillFailed(operator, root, error);
      }
    }
    this.filesCreated++;
    return join(this.#dir, `run-${++this.#files}.spill`);
  }

  /** Removes one file; a missing one is fine. */
  remove(path: string): void {
    try {
      unlinkSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }

  /** Removes the directory and everything in it. Idempotent. */
  close(): void {
    this.#closed = true;
    const dir = this.#dir;
    this.#dir = undefined;
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
}
