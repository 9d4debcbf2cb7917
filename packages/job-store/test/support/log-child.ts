// A job master stand-in in its own process: opens the log of a job and appends on command.
//   node --conditions=source --import tsx log-child.ts <url> <jobId> <keyPrefix>
// stdout: "opened <epoch>", then per stdin line "append <type>": "appended <seq>" or "error <code>".
import { createInterface } from 'node:readline';
import { createJobEventLog } from '@weft/job-store';

const [url, jobId, keyPrefix] = process.argv.slice(2) as [string, string, string];
const store = await createJobEventLog(url, { keyPrefix, retryTimeoutMs: 2_000 });
const log = await store.open({ jobId, owner: `child:${process.pid}` });
process.stdout.write(`opened ${log.epoch}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  const [command, type] = line.split(' ');
  if (command !== 'append' || type === undefined) break;
  try {
    const event = await log.append({ type, data: { from: 'child', pid: process.pid } });
    process.stdout.write(`appended ${event.seq}\n`);
  } catch (error) {
    process.stdout.write(`error ${String((error as { code?: unknown }).code)}\n`);
  }
}
await store.close();
