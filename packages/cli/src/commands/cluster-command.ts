import { type Command, ExitCode } from '../command.js';
import { parseCommandArgs, usageError } from '../parse-command-args.js';

const USAGE = `Usage: weft cluster status --cluster redis://host:port/db [--json]

Lists the task executors registered in the cluster's Redis (docs/cluster.md): id, advertised URL, host,
slots (free of total), weft version, and whether it drains. --json prints
{"cluster": url, "executors": [record…], "slots": N, "freeSlots": N}.

Options:
  --cluster URL             the cluster's Redis (default: $WEFT_CLUSTER)
  --json                    print a machine-readable answer
  -h, --help                show this help

Exit codes: 0 answered; 2 bad usage or an unreachable Redis.
`;

export const clusterCommand: Command = {
  name: 'cluster',
  summary: 'show a cluster: its registered task executors and their slots (weft cluster status)',
  usage: USAGE,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs('cluster', args, { cluster: { type: 'string' }, json: { type: 'boolean' } });
    if (positionals[0] !== 'status' || positionals.length > 1) throw usageError('cluster', positionals.length === 0 ? 'missing subcommand: status' : `unknown subcommand ${JSON.stringify(positionals.join(' '))} (expected status)`);
    const url = values.cluster ?? io.env['WEFT_CLUSTER'];
    if (url === undefined || url === '') throw usageError('cluster', 'missing --cluster redis://host:port/db');
    const { RedisExecutorRegistry } = await import('@weft/cluster');
    let registry: InstanceType<typeof RedisExecutorRegistry>;
    let executors;
    try {
      registry = new RedisExecutorRegistry({ url, setting: '--cluster' });
      await registry.start();
    } catch (error) {
      throw usageError('cluster', `--cluster: ${(error as Error).message}`, error);
    }
    try {
      executors = (await registry.listLive()).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    } finally {
      await registry.close();
    }
    const slots = executors.reduce((n, e) => n + e.slots, 0);
    const freeSlots = executors.reduce((n, e) => n + e.freeSlots, 0);
    if (values.json === true) {
      io.stdout.write(`${JSON.stringify({ cluster: registry.description, executors, slots, freeSlots })}\n`);
      return ExitCode.OK;
    }
    const lines = [`cluster ${registry.description}: ${executors.length} task executor${executors.length === 1 ? '' : 's'}, ${freeSlots} of ${slots} slots free`];
    for (const e of executors) lines.push(`  ${e.id}  ${e.advertisedUrl}  host ${e.host}  slots ${e.freeSlots}/${e.slots} free  weft ${e.version}${e.draining ? '  draining' : ''}`);
    io.stdout.write(`${lines.join('\n')}\n`);
    return ExitCode.OK;
  },
};
