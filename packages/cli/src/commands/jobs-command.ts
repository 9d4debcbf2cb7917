import { existsSync } from 'node:fs';
import type { JobEventLog, JobRunRecord } from '@weft/engine';
import { type Command, ExitCode } from '../command.js';
import { parseCommandArgs, usageError } from '../parse-command-args.js';
import { settingProblem } from './run-settings.js';
import { formatJobsReport, toJobsReportRun } from './jobs-report.js';
import { defaultMetaUrl } from './default-stores.js';

const USAGE = `Usage: weft jobs [--meta URL] [--json]

Lists the runs the job event log knows: id, job, status, started, tasks finished of total, epoch — so an
operator can see what can be resumed (\`weft run <job> --job-id <id>\` resumes an unfinished run).

Options:
  --meta URL                where the job event log is: sqlite:///abs/file.db, redis://host:port/db or
                            redis+sentinel://host:port[,host:port…]/name/db
                            (default: $WEFT_META, else ./.weft/shuffle-meta.db — the same store \`weft run\` uses)
  --json                    print {"runs": [{"jobId", "job", "status", "startedAt", "lastEventAt",
                            "tasksFinished", "tasksTotal", "tasksTotalIsUpperBound"?, "epoch", "events", "owner",
                            "problem"?}]}
  -h, --help                show this help

Status is unfinished (running, or its job master is gone), succeeded, failed, cancelled — from the run's
last events — or unreadable (a log written by a newer weft, or corrupt; "problem" says which). Tasks
finished counts tasks whose finished event no later reset names: what a resume can reuse if their
partitions still exist. A total shown as ≤N ("tasksTotalIsUpperBound": true) counts a --parallelism auto
vertex not decided yet at its reserved size. Epoch is the newest job master lease taken for the id.

Exit codes: 0 printed (also when there is no run); 2 bad usage or a bad or unreachable --meta.
`;

/** The job-store package is loaded when the command runs, not when `weft` starts. */
const JOB_STORE_MODULE = '@weft/job-store';

export const jobsCommand: Command = {
  name: 'jobs',
  summary: 'list the runs the job event log knows (what can be resumed)',
  usage: USAGE,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs('jobs', args, { meta: { type: 'string' }, json: { type: 'boolean' } });
    if (positionals.length > 0) throw usageError('jobs', `unexpected argument ${JSON.stringify(positionals[0])}`);
    const flag = values.meta !== undefined ? '--meta' : io.env['WEFT_META'] !== undefined ? 'WEFT_META' : '--meta (default)';
    const meta = values.meta ?? io.env['WEFT_META'] ?? defaultMetaUrl(io.cwd);
    const { createJobEventLog, parseJobEventLogUrl } = (await import(JOB_STORE_MODULE)) as typeof import('@weft/job-store');
    let location: ReturnType<typeof parseJobEventLogUrl>;
    try {
      location = parseJobEventLogUrl(meta, flag);
    } catch (error) {
      throw usageError('jobs', settingProblem(flag, error), error);
    }
    let runs: JobRunRecord[] = [];
    let description = meta;
    // listing never creates a store: a missing SQLite file holds no runs
    if (location.type === 'redis' || existsSync(location.path)) {
      let log: JobEventLog;
      try {
        log = await createJobEventLog(meta, { setting: flag, retryTimeoutMs: 5_000 });
      } catch (error) {
        throw usageError('jobs', settingProblem(flag, error), error);
      }
      try {
        description = log.description;
        runs = await log.listRuns();
      } finally {
        await log.close();
      }
    }
    const report = runs.map(toJobsReportRun);
    io.stdout.write(values.json === true ? `${JSON.stringify({ runs: report })}\n` : formatJobsReport(report, description));
    return ExitCode.OK;
  },
};
