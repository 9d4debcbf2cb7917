import { createDefaultRecordSerializer } from '../serialization/default-record-serializer.js';
import type { RecordSerializerFactory } from '../serialization/record-serializer.js';
import { MemoryManager } from './memory-manager.js';
import { SpillDirectory } from './spill-directory.js';

/**
 * What a task gives its operators to stay within memory: the budget (MemoryManager, shared by them),
 * where to spill (SpillDirectory, removed by the task at its end) and the serializers spilled records
 * are written with: the job's for values, the default one for keys (it keeps every KeyValue exact).
 */
export interface TaskMemory {
  readonly manager: MemoryManager;
  readonly spill: SpillDirectory;
  readonly serializer: RecordSerializerFactory;
  readonly keySerializer: RecordSerializerFactory;
}

export interface TaskMemoryOptions {
  readonly budgetBytes: number;
  /** @defaultValue os.tmpdir() */
  readonly spillDir?: string | undefined;
  /** Names the spill directory (an attempt id). */
  readonly name: string;
  /** The job the task runs for: its spill directories start with jobSpillPrefix(jobId), so a later run of the job can remove what a killed one left. */
  readonly jobId?: string | undefined;
  /** @defaultValue the default serializer */
  readonly serializer?: RecordSerializerFactory;
}

export function createTaskMemory(options: TaskMemoryOptions): TaskMemory {
  return {
    manager: new MemoryManager(options.budgetBytes),
    spill: new SpillDirectory({ root: options.spillDir, name: options.name, jobId: options.jobId }),
    serializer: options.serializer ?? createDefaultRecordSerializer,
    keySerializer: createDefaultRecordSerializer,
  };
}
