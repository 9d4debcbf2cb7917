// Generated TPC-H-like tables for the join + aggregate example: CUSTOMER (c_custkey, c_name,
// c_nationkey, c_mktsegment) and ORDERS (o_orderkey, o_custkey, o_totalprice, o_orderdate), in dbgen's
// `|`-separated .tbl layout. Prices are integer cents, so sums are exact in any order.
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const NATIONS = ['ALGERIA', 'ARGENTINA', 'BRAZIL', 'CANADA', 'EGYPT', 'ETHIOPIA', 'FRANCE', 'GERMANY', 'INDIA', 'INDONESIA', 'IRAN', 'IRAQ', 'JAPAN', 'JORDAN', 'KENYA', 'MOROCCO', 'MOZAMBIQUE', 'PERU', 'CHINA', 'ROMANIA', 'SAUDI ARABIA', 'VIETNAM', 'RUSSIA', 'UNITED KINGDOM', 'UNITED STATES'];
export const SEGMENTS = ['AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', 'MACHINERY'];

export interface Customer {
  readonly custkey: number;
  readonly name: string;
  readonly nationkey: number;
  readonly mktsegment: string;
}

export interface Order {
  readonly orderkey: number;
  readonly custkey: number;
  /** cents */
  readonly totalprice: number;
  readonly orderdate: string;
}

function hash(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x7f4a7c15, 0xc2b2ae35);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h >>> 0;
}

/** Customer `i` (custkey i + 1). */
export function customer(i: number): Customer {
  return { custkey: i + 1, name: `Customer#${String(i + 1).padStart(9, '0')}`, nationkey: hash(i, 1) % NATIONS.length, mktsegment: SEGMENTS[hash(i, 2) % SEGMENTS.length] as string };
}

/** Order `i` (orderkey i + 1) of one of `customers` customers; some customers have no orders. */
export function order(i: number, customers: number): Order {
  const day = hash(i, 4) % 2400;
  const date = new Date(Date.UTC(1992, 0, 1) + day * 86_400_000).toISOString().slice(0, 10);
  // two thirds of the customers place orders (TPC-H leaves every third without)
  let c = hash(i, 3) % customers;
  if (c % 3 === 2) c = (c + 1) % customers;
  return { orderkey: i + 1, custkey: c + 1, totalprice: 90_000 + (hash(i, 5) % 50_000_000), orderdate: date };
}

export function customerLine(c: Customer): string {
  return `${c.custkey}|${c.name}|${c.nationkey}|${c.mktsegment}|`;
}

export function orderLine(o: Order): string {
  return `${o.orderkey}|${o.custkey}|${(o.totalprice / 100).toFixed(2)}|${o.orderdate}|`;
}

export function parseCustomer(line: string): Customer {
  const f = line.split('|');
  return { custkey: Number(f[0]), name: f[1] ?? '', nationkey: Number(f[2]), mktsegment: f[3] ?? '' };
}

export function parseOrder(line: string): Order {
  const f = line.split('|');
  return { orderkey: Number(f[0]), custkey: Number(f[1]), totalprice: Math.round(Number(f[2]) * 100), orderdate: f[3] ?? '' };
}

/** Writes `customer.tbl` and `orders.tbl` into `dir`. */
export function writeTpchTables(dir: string, customers: number, orders: number): void {
  mkdirSync(dir, { recursive: true });
  const write = (file: string, count: number, line: (i: number) => string): void => {
    const fd = openSync(join(dir, file), 'w');
    try {
      for (let start = 0; start < count; start += 10_000) {
        const chunk: string[] = [];
        for (let i = start; i < Math.min(count, start + 10_000); i++) chunk.push(`${line(i)}\n`);
        writeSync(fd, chunk.join(''));
      }
    } finally {
      closeSync(fd);
    }
  };
  write('customer.tbl', customers, (i) => customerLine(customer(i)));
  write('orders.tbl', orders, (i) => orderLine(order(i, customers)));
}
