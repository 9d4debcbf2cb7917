// The naive baseline of the 10 M-key count: every key in one Map, in one process. Prints its maxRSS.
const keys = Number(process.argv[2] ?? 1_000_000);
const map = new Map();
for (let i = 0; i < keys; i++) {
  const k = `key-${i}`;
  map.set(k, (map.get(k) ?? 0) + 1);
}
let counted = 0;
for (const n of map.values()) counted += n === 1 ? 1 : 0;
if (counted !== keys) throw new Error(`counted ${counted} keys, expected ${keys}`);
process.stdout.write(`${JSON.stringify({ keys: counted, maxRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`);
