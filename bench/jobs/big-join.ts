// A left outer join whose build side is several times the task memory budget: `--build N` customers
// `[id, name]` (ids 0..N-1, a 64-character name), `--probe M` orders `[customer, order]` naming customers
// 0..2N-1 (half of them missing), joined on the customer id with the customers as the build side; then the
// pairs counted as matched / unmatched (the missing side is null).
import { defineJob } from '@weft/engine';

export const NAME_PADDING = 'n'.repeat(56);

export default defineJob(
  (ctx) => {
    const build = ctx.args.integer('build', 1_000_000, 1);
    const probe = ctx.args.integer('probe', 1_000_000, 1);
    const customers = ctx.range(0, build, { name: 'customers' }).map((i): [number, string] => [i, `${NAME_PADDING}${String(i).padStart(8, '0')}`], { name: 'customer' });
    const orders = ctx.range(0, probe, { name: 'orders' }).map((i): [number, number] => [(i * 7919) % (2 * build), i], { name: 'order' });
    orders
      .keyBy(([customer]) => customer)
      .leftOuterJoin(customers.keyBy(([id]) => id), (_o, c) => (c === null ? 'unmatched' : 'matched'), { name: 'join', build: 'right' })
      .keyBy()
      .count({ name: 'pairs', parallelism: 1 })
      .collect('pairs');
  },
  { name: 'big-join' },
);
