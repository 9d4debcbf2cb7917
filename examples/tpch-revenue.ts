// Revenue per nation and market segment (TPC-H-like): ORDERS joined with CUSTOMER on the customer key
// (hash join), then summed per (nation, segment) with map-side combining. Reads --input <dir> holding
// dbgen-style customer.tbl and orders.tbl, or generates --customers / --orders rows when it is absent.
// Writes `nation<TAB>segment<TAB>revenue<TAB>orders` lines to --output (any order) and collects the rows
// sorted by revenue, largest first.
//
//   npx weft run examples/tpch-revenue.ts -- --customers 15000 --orders 150000 --output revenue.tsv
import { join } from 'node:path';
import { defineJob } from '@weft/engine';
import { customer, NATIONS, order, parseCustomer, parseOrder } from './lib/tpch-data.js';

type Row = [nation: string, segment: string, cents: number];

export default defineJob(
  (ctx) => {
    const { input, output } = ctx.args;
    const customerCount = ctx.args.integer('customers', 15_000, 1);
    const customers =
      input !== undefined
        ? ctx.readTextFile(join(input, 'customer.tbl'), { name: 'read-customers' }).map(parseCustomer, { name: 'parse-customers' })
        : ctx.range(0, customerCount, { name: 'generate-customers' }).map(customer, { name: 'customer-row' });
    const orders =
      input !== undefined
        ? ctx.readTextFile(join(input, 'orders.tbl'), { name: 'read-orders' }).map(parseOrder, { name: 'parse-orders' })
        : ctx.range(0, ctx.args.integer('orders', 150_000, 0), { name: 'generate-orders' }).map((i) => order(i, customerCount), { name: 'order-row' });

    const rows = orders
      .keyBy((o) => o.custkey)
      .join(customers.keyBy((c) => c.custkey), (o, c): Row => [NATIONS[c.nationkey] ?? `nation ${c.nationkey}`, c.mktsegment, o.totalprice], { name: 'join-customers' });
    const revenue = rows
      .keyBy(([nation, segment]) => [nation, segment])
      .aggregate(
        {
          createAccumulator: (): [number, number] => [0, 0],
          add: (acc: [number, number], row: Row): [number, number] => [acc[0] + row[2], acc[1] + 1],
          merge: (a: [number, number], b: [number, number]): [number, number] => [a[0] + b[0], a[1] + b[1]],
          getResult: (acc: [number, number]) => acc,
        },
        { name: 'revenue' },
      )
      .map(([[nation, segment], [cents, count]]) => `${nation}\t${segment}\t${(cents / 100).toFixed(2)}\t${count}`, { name: 'format' });
    if (output !== undefined) revenue.writeText(output, { name: 'write-revenue' });
    revenue
      .sortBy((line) => Number(line.split('\t')[2]), { name: 'by-revenue', descending: true, parallelism: 1 })
      .collect('revenue by nation and segment');
  },
  { name: 'tpch-revenue' },
);
