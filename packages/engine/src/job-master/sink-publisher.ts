import { copyFile, link, lstat, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError } from '../errors/engine-error.js';
import type { JobPlan } from '../graph/job-plan.js';
import type { ExternalFileSystem, StagedExternalFile } from '../io/external-file-system.js';
import { resolveJobPath, sinkTempDirOf } from '../io/job-paths.js';
import type { SinkOutput } from '../operators/stream-operator.js';
import { joinLocalParts } from './join-local-parts.js';

type TextFileOutput = Extract<SinkOutput, { kind: 'text-file' }>;

/** What the job's sinks produced, once published. */
export interface PublishedSinks {
  /** `collect(name)` values, subtask by subtask. */
  readonly collected: Record<string, unknown[]>;
  /** Text files renamed into place. */
  readonly files: readonly { readonly sink: string; readonly path: string; readonly parts: number }[];
}

/** The temporary directories the text sinks of `plan` write attempts into (known before any task runs). */
export function textSinkTempDirs(plan: JobPlan, cwd: string, jobId: string, fileSystems: readonly ExternalFileSystem[] = []): string[] {
  return plan.logical.nodes.flatMap((n) => (n.spec.kind === 'text-sink' ? [sinkTempDirOf(resolveJobPath(n.spec.path, cwd, fileSystems), jobId)] : []));
}

/** The external file system a sink's temporary directory (or file) lives on; undefined for a local one. */
export function fileSystemOf(path: string, fileSystems: readonly ExternalFileSystem[]): ExternalFileSystem | undefined {
  return fileSystems.find((fs) => path.toLowerCase().startsWith(`${fs.scheme}://`));
}

/** One text sink, staged: its bytes in place, not yet visible at its output path. */
interface StagedSink {
  readonly sink: string;
  readonly path: string;
  readonly parts: number;
  readonly staged: StagedExternalFile;
}

/** A local sink's staged file: its parts joined into one file in its temporary directory. */
interface StagedFile {
  readonly path: string;
  readonly staged: string;
  /** A hard link to (or copy of) the file the output path held before, to restore on a rollback. */
  readonly previous: string;
  hadPrevious: boolean;
}

/**
 * Publishes the sinks of a successful job, from the outputs of the finished attempts only, all or
 * nothing: first every text sink is staged — a local one's part files copied in subtask order into one
 * file in its temporary directory (beside the output, so on the same file system); an external one's
 * parts joined by its file system into an upload not yet visible (`ExternalFileSystem.stage`) — then
 * each is committed: a local staged file renamed onto its output path, an external upload completed
 * (both atomic per file). Should a stage or a commit fail, the staged sinks not committed are discarded
 * and the outputs already committed are rolled back (what a path held before is put back; a path that
 * held none is removed), so a job that reports failure has published nothing. Collected values are
 * gathered in subtask order. `finalCommit`, last, is the two-phase-commit sinks' commit at the end of
 * input (two-phase-commits.ts): the text sinks' publish is that same two phases — staged (pre-committed),
 * then committed — and a final commit that fails rolls the text sinks back (what the two-phase-commit
 * sinks committed before the failure stays: commits are final, and committed again by a resumed run).
 *
 * The part files stay where they are: a job master killed while publishing leaves every finished
 * attempt's parts, so the run that resumes it publishes again from them (contract 7). On failure the
 * attempts' temporary directories are removed here; on success the caller removes them
 * (`discardTempDirs`) once it has recorded what was published.
 */
export async function publishSinks(outputs: readonly SinkOutput[], tempDirs: readonly string[], fileSystems: readonly ExternalFileSystem[] = [], finalCommit?: () => Promise<void>): Promise<PublishedSinks> {
  const collected: Record<string, unknown[]> = {};
  const collects = outputs.filter((o): o is Extract<SinkOutput, { kind: 'collect' }> => o.kind === 'collect').sort((a, b) => a.subtask - b.subtask);
  for (const c of collects) (collected[c.sink] ??= []).push(...c.values);
  const byPath = new Map<string, TextFileOutput[]>();
  for (const o of outputs) {
    if (o.kind !== 'text-file') continue;
    const list = byPath.get(o.path);
    if (list === undefined) byPath.set(o.path, [o]);
    else list.push(o);
  }
  const staged: StagedSink[] = [];
  try {
    try {
      for (const [path, parts] of byPath) staged.push(await stage(path, parts, fileSystems));
    } catch (error) {
      for (const sink of staged) await sink.staged.discard().catch(() => {});
      throw error;
    }
    await commit(staged);
    if (finalCommit !== undefined) {
      try {
        await finalCommit();
      } catch (error) {
        // the two-phase-commit sinks' final commit failed: the text sinks are rolled back, nothing reported published
        const problems = await rollBack([...staged].reverse());
        const rollback = problems.length === 0 ? '' : `; rolling back failed: ${problems.join('; ')}`;
        throw new EngineError('WEFT_ERR_SINK_FAILED', `${(error as Error).message}${staged.length === 0 ? '' : ` (${staged.map((f) => f.path).join(', ')} rolled back)`}${rollback}`, { cause: error, context: { path: staged.map((f) => f.path).join(', ') } });
      }
    }
    return { collected, files: staged.map(({ sink, path, parts }) => ({ sink, path, parts })) };
  } catch (error) {
    await discardTempDirs(tempDirs, fileSystems);
    throw error;
  }
}

/** Joins one sink's finished parts, in subtask order, without making them visible (the parts stay). */
async function stage(path: string, parts: TextFileOutput[], fileSystems: readonly ExternalFileSystem[]): Promise<StagedSink> {
  parts.sort((a, b) => a.subtask - b.subtask);
  const first = parts[0] as TextFileOutput;
  if (parts.length !== first.parallelism || parts.some((p, i) => p.subtask !== i)) {
    throw sinkFailed(path, `expected ${first.parallelism} finished parts, got subtasks ${parts.map((p) => p.subtask).join(', ')}`);
  }
  const external = fileSystemOf(path, fileSystems);
  try {
    const staged = external === undefined ? await stageLocal(path, parts) : await external.stage({ target: path, parts: parts.map((p) => p.file), tempDir: first.tempDir });
    return { sink: first.sink, path, parts: parts.length, staged };
  } catch (error) {
    throw sinkFailed(path, (error as Error).message, error);
  }
}

/** A local sink: its parts joined into `<tempDir>/joined` (joinLocalParts), renamed onto the output path at commit. */
async function stageLocal(path: string, parts: readonly TextFileOutput[]): Promise<StagedExternalFile> {
  const first = parts[0] as TextFileOutput;
  const file: StagedFile = { path, staged: join(first.tempDir, 'joined'), previous: join(first.tempDir, 'previous'), hadPrevious: false };
  await joinLocalParts(file.staged, parts.map((p) => p.file));
  return {
    async commit() {
      await keepPrevious(file);
      await rename(file.staged, file.path);
    },
    async rollBack() {
      if (file.hadPrevious) await rename(file.previous, file.path);
      else await rm(file.path, { force: true });
    },
    async discard() {
      await rm(file.staged, { force: true });
    },
  };
}

/** Commits every staged sink; on a failure, discards the ones not committed and rolls back the ones committed before it. */
async function commit(staged: readonly StagedSink[]): Promise<void> {
  const committed: StagedSink[] = [];
  for (const [i, sink] of staged.entries()) {
    try {
      await sink.staged.commit();
      committed.push(sink);
    } catch (error) {
      // This sink's own commit did not happen: its output path is as it was.
      const problems = await rollBack(committed.reverse());
      for (const rest of staged.slice(i)) await rest.staged.discard().catch(() => {});
      const rollback = problems.length === 0 ? '' : `; rolling back failed: ${problems.join('; ')}`;
      const published = committed.length === 0 ? '' : ` (${committed.map((f) => f.path).join(', ')} rolled back)`;
      throw sinkFailed(sink.path, `${(error as Error).message}${published}${rollback}`, error);
    }
  }
}

/** Keeps what a regular file at the output path held (a hard link; a copy where links fail), to restore it. */
async function keepPrevious(file: StagedFile): Promise<void> {
  let info;
  try {
    info = await lstat(file.path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (!info.isFile()) return; // the rename fails on a directory; nothing to restore
  try {
    await link(file.path, file.previous);
  } catch {
    await copyFile(file.path, file.previous);
  }
  file.hadPrevious = true;
}

/** Puts back what each output path held before (removes it where it held nothing). Every step runs; returns the problems. */
async function rollBack(sinks: readonly StagedSink[]): Promise<string[]> {
  const problems: string[] = [];
  for (const sink of sinks) {
    try {
      await sink.staged.rollBack();
    } catch (error) {
      problems.push(`${sink.path}: ${(error as Error).message}`);
    }
  }
  return problems;
}

/** Removes the attempts' temporary directories, local or external (a failed job's sinks leave nothing behind). */
export async function discardTempDirs(tempDirs: readonly string[], fileSystems: readonly ExternalFileSystem[] = []): Promise<void> {
  await Promise.all(
    tempDirs.map((dir) => {
      const external = fileSystemOf(dir, fileSystems);
      return (external === undefined ? rm(dir, { recursive: true, force: true }) : external.deleteUnder(dir)).catch(() => {});
    }),
  );
}

function sinkFailed(path: string, problem: string, cause?: unknown): EngineError {
  return new EngineError('WEFT_ERR_SINK_FAILED', `cannot publish ${path}: ${problem}`, { context: { path }, ...(cause === undefined ? {} : { cause }) });
}
