import {
  buildPipelinedRegions,
  createFailoverStrategy,
  ExecutionTopology,
  FAILOVER_STRATEGY_NAMES,
  type FailoverStrategyName,
  isEngineError,
  isFailoverStrategyName,
} from '@weft/engine';
import { type Command, ExitCode } from '../command.js';
import { parseCommandArgs, usageError } from '../parse-command-args.js';
import { readJsonFile } from '../read-json-file.js';
import { formatPlanReport } from './plan-report.js';

const USAGE = `Usage: weft plan <topology.json> [--json] [--fail <executionVertexId>] [--lost <resultPartition>]... [--strategy region|all|individual]

Prints the pipelined regions of a job topology and, with --fail, the tasks a failure restarts.

Arguments:
  <topology.json>           {"vertices": [{"id", "parallelism"}], "edges": [{"id"?, "source", "target",
                            "distribution": ALL_TO_ALL|POINTWISE, "partitionType": PIPELINED|BLOCKING|…}]}

Options:
  --json                    print {"regions": [[...], ...]} (and "restart": [...] with --fail)
  --fail <vertex#i>         the failed execution vertex, e.g. map#3
  --lost <edgeId#i>         a result partition lost with the failure (repeatable; needs --fail)
  --strategy S              failover strategy for --fail: region (default), all, or individual (only
                            the failed task; refused for a topology with edges)
  -h, --help                show this help

Without --json it prints the same for a person to read. \`weft run <job> --plan-only --json\` prints a
job's topology in this form; each failover a run reports restarts exactly the tasks this command
prints for the same --fail, --lost and --strategy. The file may also be a \`weft run --json\` summary:
its topology is read (a \`--parallelism auto\` run's, with the parallelism each vertex was decided to).

Exit codes: 0 printed; 2 bad usage, unreadable or invalid topology, unknown vertex or partition.
`;

export const planCommand: Command = {
  name: 'plan',
  summary: 'print the pipelined regions of a job topology and the blast radius of a failure',
  usage: USAGE,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs('plan', args, {
      json: { type: 'boolean' },
      fail: { type: 'string' },
      lost: { type: 'string', multiple: true },
      strategy: { type: 'string' },
    });
    if (positionals.length === 0) throw usageError('plan', 'missing <topology.json>');
    if (positionals.length > 1) throw usageError('plan', `expected one topology file, got ${positionals.length}: ${positionals.join(' ')}`);
    const strategy: FailoverStrategyName = (values.strategy ?? 'region') as FailoverStrategyName;
    if (!isFailoverStrategyName(strategy)) {
      throw usageError('plan', `--strategy must be one of ${FAILOVER_STRATEGY_NAMES.join(', ')}, got ${JSON.stringify(values.strategy)}`);
    }
    const lostIds = values.lost ?? [];
    if (lostIds.length > 0 && values.fail === undefined) throw usageError('plan', '--lost needs --fail <executionVertexId>');
    const path = positionals[0] as string;

    const json = await readJsonFile(path, io.cwd, 'topology file');
    let topology: ExecutionTopology;
    try {
      // a `weft run --json` summary: its topology (an adaptive run's, with every decided parallelism)
      const summary = typeof json === 'object' && json !== null && 'topology' in json && 'jobId' in json;
      topology = ExecutionTopology.from(summary ? (json as { topology: unknown }).topology : json);
    } catch (error) {
      if (isEngineError(error, 'WEFT_ERR_INVALID_TOPOLOGY')) error.message = `${path}: ${error.message}`;
      throw error;
    }
    const regions = buildPipelinedRegions(topology);

    let restart: Int32Array | undefined;
    if (values.fail !== undefined) {
      topology.requireExecutionVertex(values.fail, '--fail');
      for (const id of lostIds) topology.requireResultPartition(id, '--lost');
      restart = createFailoverStrategy(topology, strategy, { regions }).verticesToRestart({ failedVertex: values.fail, lostPartitions: lostIds });
    }

    if (values.json === true) {
      const ids = topology.executionVertexIds();
      const out: { regions: string[][]; restart?: string[] } = { regions: regions.toIds() };
      if (restart !== undefined) out.restart = Array.from(restart, (v) => ids[v] as string);
      io.stdout.write(`${JSON.stringify(out)}\n`);
    } else {
      io.stdout.write(
        formatPlanReport({
          path,
          topology,
          regions,
          ...(restart === undefined || values.fail === undefined ? {} : { failure: { failedVertex: values.fail, lost: lostIds, strategy, restart } }),
        }),
      );
    }
    return ExitCode.OK;
  },
};
