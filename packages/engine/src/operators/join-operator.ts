import type { KeySelector, KeyValue } from '../api/functions.js';
import { JoinPartitions } from '../memory/join-partitions.js';
import type { MemoryConsumer } from '../memory/memory-manager.js';
import { KEYED_ENTRY_OVERHEAD_BYTES } from '../memory/spilling-aggregation-table.js';
import { primitiveSerializedSize } from '../serialization/primitive-size.js';
import type { RecordSerializer } from '../serialization/record-serializer.js';
import { checkKey } from '../runtime/key-hash.js';
import { userFunctionError } from '../runtime/user-function-error.js';
import { KeyedTable } from './keyed-table.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator } from './stream-operator.js';

/** What one build value costs beyond its serialized bytes: its slot in its key's array. */
export const JOIN_VALUE_OVERHEAD_BYTES = 16;

/**
 * Inner hash join: input `build` is read first, whole, into a table of values per key; then every value
 * of the other (probe) input is joined with the build values of its key, `fn(left, right)` each.
 *
 * The build table counts against the task's memory budget (serialized key and values, plus
 * KEYED_ENTRY_OVERHEAD_BYTES a key and JOIN_VALUE_OVERHEAD_BYTES a value). When it is refused, the join
 * turns into a Grace hash join: the build side (what it held and the rest) and then the probe side are
 * written to JOIN_SPILL_PARTITIONS hash partitions in the spill directory, and `finish()` joins them
 * partition by partition, each build partition loaded whole — one larger than the budget is held anyway
 * (no recursive repartitioning yet). Output order is not defined.
 */
export class JoinOperator implements StreamOperator {
  readonly inputPhases: readonly (readonly number[])[];
  readonly #table = new KeyedTable<unknown[]>();
  readonly #memory: MemoryConsumer;
  readonly #keys: RecordSerializer;
  readonly #values: RecordSerializer;
  #build: JoinPartitions | undefined;
  #probe: JoinPartitions | undefined;

  constructor(
    private readonly spec: {
      readonly leftKey: KeySelector<unknown, KeyValue>;
      readonly rightKey: KeySelector<unknown, KeyValue>;
      readonly fn: (left: unknown, right: unknown) => unknown;
      readonly build: 0 | 1;
    },
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.inputPhases = spec.build === 1 ? [[1], [0]] : [[0], [1]];
    this.#memory = context.memory.manager.consumer(context.operatorName);
    this.#keys = context.memory.keySerializer();
    this.#values = context.memory.serializer();
  }

  /** Whether the build side outgrew the budget (the join runs partition by partition from disk). */
  get spilled(): boolean {
    return this.#build !== undefined;
  }

  collect(value: unknown): void {
    this.processInput(value, 0);
  }

  processInput(value: unknown, input: number): void {
    const { spec, context } = this;
    let key: unknown;
    try {
      key = input === 0 ? spec.leftKey(value) : spec.rightKey(value);
    } catch (error) {
      throw userFunctionError(context, error, `${input === 0 ? 'left' : 'right'} key selector`);
    }
    if (this.#build !== undefined) {
      try {
        checkKey(key);
      } catch (error) {
        throw userFunctionError(context, error, `${input === 0 ? 'left' : 'right'} key selector`);
      }
      if (input === spec.build) this.#build.add(key as KeyValue, value);
      else (this.#probe ??= this.#partitions()).add(key as KeyValue, value);
      return;
    }
    let matches: unknown[] | undefined;
    try {
      matches = this.#table.get(key);
    } catch (error) {
      throw userFunctionError(context, error, `${input === 0 ? 'left' : 'right'} key selector`);
    }
    if (input === spec.build) {
      const cost = (primitiveSerializedSize(value) ?? this.#values.serialize(value).length) + JOIN_VALUE_OVERHEAD_BYTES + (matches === undefined ? (primitiveSerializedSize(key) ?? this.#keys.serialize(key).length) + KEYED_ENTRY_OVERHEAD_BYTES : 0);
      if (!this.#memory.tryReserve(cost)) {
        this.#memory.checkRecordSize(cost);
        this.#spillBuild();
        (this.#build as unknown as JoinPartitions).add(key as KeyValue, value);
        return;
      }
      if (matches === undefined) this.#table.set(key, [value]);
      else matches.push(value);
      return;
    }
    if (matches === undefined) return;
    for (let i = 0; i < matches.length; i++) this.output.collect(this.#join(matches[i], value));
  }

  async finish(): Promise<void> {
    const build = this.#build;
    if (build === undefined) return;
    build.finish();
    const probe = this.#probe;
    probe?.finish();
    if (probe === undefined) return;
    for (let p = 0; p < build.count; p++) {
      const table = this.#table;
      for (const [key, value] of build.read(p)) {
        const matches = table.get(key);
        if (matches === undefined) table.set(key, [value]);
        else matches.push(value);
      }
      build.drop(p);
      const join = this.#join.bind(this);
      await emitAll(
        (function* () {
          for (const [key, value] of probe.read(p)) {
            const matches = table.get(key);
            if (matches !== undefined) for (let i = 0; i < matches.length; i++) yield join(matches[i], value);
          }
        })(),
        this.output,
        this.context,
        (joined) => joined,
      );
      probe.drop(p);
      table.clear();
    }
  }

  close(): void {
    this.#table.clear();
    this.#memory.releaseAll();
    this.#build?.close();
    this.#probe?.close();
  }

  #join(buildValue: unknown, probeValue: unknown): unknown {
    try {
      return this.spec.build === 1 ? this.spec.fn(probeValue, buildValue) : this.spec.fn(buildValue, probeValue);
    } catch (error) {
      throw userFunctionError(this.context, error, 'join function');
    }
  }

  #partitions(): JoinPartitions {
    return new JoinPartitions({ operator: this.context.operatorName, spill: this.context.memory.spill, keys: this.#keys, values: this.#values });
  }

  /** The build table is full: everything it holds goes to the build partitions, and so does the rest of the build side. */
  #spillBuild(): void {
    const build = this.#partitions();
    this.#build = build;
    for (const [key, values] of this.#table.entries()) for (const value of values) build.add(key, value);
    this.#table.clear();
    this.#memory.releaseAll();
  }
}
