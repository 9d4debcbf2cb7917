import { DEFAULT_TASK_MEMORY_FRACTION, MIN_TASK_MEMORY_BYTES } from '@weft/engine';
import { usageError } from '../parse-command-args.js';

/** The `weft run` flags about managed memory and spilling. */
export const MEMORY_FLAGS = {
  'task-memory': { type: 'string' },
  'spill-dir': { type: 'string' },
} as const;

export type MemoryFlagValues = { readonly [K in keyof typeof MEMORY_FLAGS]?: string | undefined };

/** The help text of the memory flags. */
export const MEMORY_USAGE = `Memory:
  --task-memory SIZE        managed memory of each task, shared by its operators, in bytes of serialized
                            data: 512m, 2g, 65536, 64KiB … (k/m/g = KiB/MiB/GiB). A sort or a keyed
                            aggregation that fills it spills sorted runs to disk and merges them; a
                            combiner emits early. Default: ${DEFAULT_TASK_MEMORY_FRACTION * 100} % of the smaller of the machine's memory and
                            the V8 heap limit, divided by its cores. At least ${MIN_TASK_MEMORY_BYTES / 1024} KiB (less: exit 2)
  --spill-dir PATH          where tasks put their spill files (a weft-spill-<job>-<attempt>-* directory each,
                            removed when the task ends; a later run of the same --job-id removes what tasks
                            killed with their processes left) (default: the system's temp directory)`;

const UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3, t: 1024 ** 4, tb: 1024 ** 4, tib: 1024 ** 4 };

/** A size such as `512m`, `1.5GiB` or `65536` in bytes; WEFT_ERR_USAGE naming `flag` otherwise. */
export function parseSizeFlag(command: string, flag: string, value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(value);
  const unit = UNITS[(m?.[2] ?? '').toLowerCase()];
  const bytes = m === null || unit === undefined ? Number.NaN : Math.floor(Number(m[1]) * unit);
  if (!Number.isSafeInteger(bytes)) throw usageError(command, `${flag} must be a size such as 512m, 2g or 65536 (bytes), got ${JSON.stringify(value)}`);
  return bytes;
}

/** What the memory flags resolve to, as `runJob` options; a budget too small to run: WEFT_ERR_USAGE naming --task-memory. */
export function parseMemoryFlags(values: MemoryFlagValues): { taskMemoryBytes?: number; spillDir?: string } {
  const out: { taskMemoryBytes?: number; spillDir?: string } = {};
  const size = values['task-memory'];
  if (size !== undefined) {
    const bytes = parseSizeFlag('run', '--task-memory', size);
    if (bytes < MIN_TASK_MEMORY_BYTES) throw usageError('run', `--task-memory ${size} (${bytes} bytes) is too small to run a task: at least ${MIN_TASK_MEMORY_BYTES / 1024} KiB (${MIN_TASK_MEMORY_BYTES} bytes)`);
    out.taskMemoryBytes = bytes;
  }
  const dir = values['spill-dir'];
  if (dir !== undefined) {
    if (dir.trim() === '') throw usageError('run', '--spill-dir must name a directory');
    out.spillDir = dir;
  }
  return out;
}
