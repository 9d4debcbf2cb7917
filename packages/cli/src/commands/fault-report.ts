import type { FaultHarness } from '../faults/fault-harness.js';

/** What `--inject-faults` did: each fault, its target, and whether (and how) it fired. */
export function formatFaultReport(harness: FaultHarness): string {
  const lines = [`  injected faults (replay with --inject-faults '${harness.replaySpec}'):`];
  for (const fault of harness.faults) {
    const where = fault.target === undefined ? '' : ` ${fault.target}`;
    const when = fault.kind === 'restart-redis' ? ` before deployment ${fault.at}` : fault.kind === 'kill-job-master' ? ` #${fault.at}` : fault.point !== undefined ? ` at ${fault.point}` : '';
    const notFired = fault.kind === 'kill-job-master' ? 'did not fire (the log held that event before this run, or the job ended first)' : 'did not fire (the job ended first)';
    lines.push(`    ${fault.kind}${where}${when}: ${fault.fired ? (fault.detail ?? 'fired') : notFired}`);
  }
  return `${lines.join('\n')}\n`;
}
