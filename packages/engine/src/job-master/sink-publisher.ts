import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { EngineError } from '../errors/engine-error.js';
import type { JobPlan } from '../graph/job-plan.js';
import { textSinkTempDir } from '../operators/text-sink-operator.js';
import type { SinkOutput } from '../operators/stream-operator.js';

type TextFileOutput = Extract<SinkOutput, { kind: 'text-file' }>;

/** What the job's sinks produced, once published. */
export interface PublishedSinks {
  /** `collect(name)` values, subtask by subtask. */
  readonly collected: Record<string, unknown[]>;
  /** Text files renamed into place. */
  readonly files: readonly { readonly sink: string; readonly path: string; readonly parts: number }[];
}

/** The temporary directories the text sinks of `plan` write attempts into (known before any task runs). */
export function textSinkTempDirs(plan: JobPlan, cwd: string, jobId: string): string[] {
  return plan.logical.nodes.flatMap((n) => (n.spec.kind === 'text-sink' ? [textSinkTempDir(resolve(cwd, n.spec.path), jobId)] : []));
}

/**
 * Publishes the sinks of a successful job, from the outputs of the finished attempts only: each text
 * sink's part files are joined in subtask order into one file, which is renamed onto the output path
 * (atomic on one file system); collected values are gathered in subtask order. Then (and on failure,
 * through `discard`) the attempts' temporary directories are removed, so nothing partial stays behind.
 */
export async function publishSinks(outputs: readonly SinkOutput[], tempDirs: readonly string[]): Promise<PublishedSinks> {
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
  const files: { sink: string; path: string; parts: number }[] = [];
  try {
    for (const [path, parts] of byPath) {
      parts.sort((a, b) => a.subtask - b.subtask);
      const first = parts[0] as TextFileOutput;
      if (parts.length !== first.parallelism || parts.some((p, i) => p.subtask !== i)) {
        throw sinkFailed(path, `expected ${first.parallelism} finished parts, got subtasks ${parts.map((p) => p.subtask).join(', ')}`);
      }
      try {
        const joined = join(first.tempDir, 'joined');
        await rename(first.file, joined);
        for (const part of parts.slice(1)) await pipeline(createReadStream(part.file), createWriteStream(joined, { flags: 'a' }));
        await rename(joined, path);
      } catch (error) {
        throw sinkFailed(path, (error as Error).message, error);
      }
      files.push({ sink: first.sink, path, parts: parts.length });
    }
  } finally {
    await discardTempDirs(tempDirs);
  }
  return { collected, files };
}

/** Removes the attempts' temporary directories (a failed job's sinks leave nothing behind). */
export async function discardTempDirs(tempDirs: readonly string[]): Promise<void> {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true }).catch(() => {})));
}

function sinkFailed(path: string, problem: string, cause?: unknown): EngineError {
  return new EngineError('WEFT_ERR_SINK_FAILED', `cannot publish ${path}: ${problem}`, { context: { path }, ...(cause === undefined ? {} : { cause }) });
}
