// The naive baseline of the 4x-budget join (bench/jobs/big-join.ts): the build side in one Map, the probe
// side streamed past it, in one process. Prints the matched / unmatched counts and its maxRSS.
const build = Number(process.argv[2] ?? 1_000_000);
const probe = Number(process.argv[3] ?? 1_000_000);
const NAME_PADDING = 'n'.repeat(56);
const customers = new Map();
for (let i = 0; i < build; i++) customers.set(i, [i, `${NAME_PADDING}${String(i).padStart(8, '0')}`]);
let matched = 0;
let unmatched = 0;
for (let i = 0; i < probe; i++) {
  if (customers.get((i * 7919) % (2 * build)) === undefined) unmatched++;
  else matched++;
}
process.stdout.write(`${JSON.stringify({ matched, unmatched, maxRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`);
