// The naive baseline of the sort: terasort records (examples/lib/terasort-data.ts, copied) in one array,
// sorted by key with Array.prototype.sort, in one process. Prints its maxRSS.
const records = Number(process.argv[2] ?? 1_000_000);
const KEY_LENGTH = 10;
function mix(x) {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}
function terasortRecord(i) {
  let key = '';
  let h = mix(i + 1);
  for (let k = 0; k < KEY_LENGTH; k++) {
    if (k % 4 === 0) h = mix(h + k + i);
    key += String.fromCharCode(33 + (h % 94));
    h = Math.floor(h / 94);
  }
  const payload = `${String(i).padStart(12, '0')}${'ABCDEFGHIJ'.repeat(8)}`.slice(0, 99 - KEY_LENGTH - 1);
  return `${key}\t${payload}`;
}
const lines = [];
for (let i = 0; i < records; i++) lines.push(terasortRecord(i));
const keyed = lines.map((line) => [line.slice(0, KEY_LENGTH), line]);
keyed.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
for (let i = 1; i < keyed.length; i++) if (keyed[i - 1][0] > keyed[i][0]) throw new Error('not sorted');
process.stdout.write(`${JSON.stringify({ records: keyed.length, maxRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`);
