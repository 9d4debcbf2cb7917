// Outer joins through the DataSet API (issue 13, Deliver 4): leftOuterJoin, rightOuterJoin and
// fullOuterJoin run over the in-memory shuffle in process, with a 64 KiB task memory budget and the build
// side several times it, against a nested-loop reference: the missing side is `null`.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defineJob, type JobBuildFunction, type JobResult, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';

interface Order {
  readonly customer: number;
  readonly order: number;
}
interface Customer {
  readonly customer: number;
  readonly name: string;
}

// customers 0..2999 (the build side, ~4x the budget per subtask in serialized bytes); orders name customers 1500..4499
const CUSTOMERS: Customer[] = Array.from({ length: 6000 }, (_, i) => ({ customer: i % 3000, name: `customer-${i}-${'x'.repeat(60)}` }));
const ORDERS: Order[] = Array.from({ length: 900 }, (_, i) => ({ customer: 1500 + ((i * 7) % 3000), order: i }));

type Pair = [number | null, string | null];

function reference(kind: 'inner' | 'left' | 'right' | 'full'): string[] {
  const out: Pair[] = [];
  const matched = new Set<Customer>();
  for (const o of ORDERS) {
    const hits = CUSTOMERS.filter((c) => c.customer === o.customer);
    for (const c of hits) matched.add(c);
    for (const c of hits) out.push([o.order, c.name]);
    if (hits.length === 0 && (kind === 'left' || kind === 'full')) out.push([o.order, null]);
  }
  if (kind === 'right' || kind === 'full') for (const c of CUSTOMERS) if (!matched.has(c)) out.push([null, c.name]);
  return out.map((p) => JSON.stringify(p)).sort();
}

async function run(dir: string, build: JobBuildFunction): Promise<JobResult> {
  const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  return runJob({ job: defineJob(build), parallelism: 2, executor: 'inprocess', slotsPerExecutor: 2, taskMemoryBytes: 64 * 1024, spillDir: dir, shuffle: { pipelined: memory, blocking: memory } });
}

describe('outer joins through the DataSet API', () => {
  it('inner, left, right and full outer joins give the reference pairs, null for the missing side, with the build side spilled', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weft-outer-join-'));
    try {
      const result = await run(dir, (ctx) => {
        const orders = ctx.fromArray(ORDERS, { name: 'orders' }).keyBy((o) => o.customer);
        const customers = ctx.fromArray(CUSTOMERS, { name: 'customers' }).keyBy((c) => c.customer);
        const pair = (o: Order | null, c: Customer | null): string => JSON.stringify([o?.order ?? null, c?.name ?? null]);
        orders.join(customers, pair, { name: 'inner' }).collect('inner');
        orders.leftOuterJoin(customers, pair, { name: 'left' }).collect('left');
        orders.rightOuterJoin(customers, pair, { name: 'right' }).collect('right');
        orders.fullOuterJoin(customers, pair, { name: 'full' }).collect('full');
        // the default function: [left, right] with null for the missing side
        orders.leftOuterJoin(customers, undefined, { name: 'default' }).collect('default');
      });
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      for (const kind of ['inner', 'left', 'right', 'full'] as const) {
        assert.deepEqual([...(result.collected[kind] as string[])].sort(), reference(kind), kind);
      }
      const defaults = result.collected['default'] as [Order, Customer | null][];
      assert.deepEqual(defaults.filter(([, c]) => c === null).map(([o]) => o.order).sort((a, b) => a - b), ORDERS.filter((o) => o.customer >= 3000).map((o) => o.order));
      assert.deepEqual(readdirSync(dir), [], 'no spill directory is left');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
