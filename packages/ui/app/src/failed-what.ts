import type { UiFailover } from '../../src/api/ui-api.js';

/** What a failover was for: `<task> failed`, or the job master's global failover (it names no task). */
export function failedWhat(failover: UiFailover): string {
  return failover.global === true ? 'the job master failed over globally (every task restarted)' : `${failover.failedTask ?? '?'} failed`;
}
