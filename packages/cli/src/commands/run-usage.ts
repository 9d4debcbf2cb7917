// `weft run --help`, and the limits and defaults it states.
import { EXCHANGE_MODES } from '@weft/engine';
import { FAULT_SPEC_GRAMMAR } from '../faults/fault-spec.js';
import { ADAPTIVE_USAGE } from './adaptive-flags.js';
import { APPROXIMATE_USAGE } from './approximate-flags.js';
import { CHECKPOINT_USAGE } from './checkpoint-flags.js';
import { MEMORY_USAGE } from './memory-flags.js';
import { RECOVERY_USAGE } from './run-options.js';
import { RUN_UI_USAGE } from './run-ui.js';
import { DEFAULT_STANDBY_TAKEOVER_MS } from './standby.js';

/** The most copies --shuffle-replicas takes (the client's `replicas` limit). */
export const MAX_SHUFFLE_REPLICAS = 8;

/** The restart strategy under --inject-faults when none is given. */
export const FAULT_RESTART_ATTEMPTS = 10;
export const FAULT_RESTART_DELAY_MS = 100;

export const RUN_USAGE = `Usage: weft run <job module> [--parallelism N] [--store URL] [--meta URL] [--shuffle-servers URL [--shuffle-replicas N]] [--executor inprocess|workers]
                [--cluster URL [--cluster-startup-timeout MS] [--secret-file PATH]]
                [--parallelism auto [--min-parallelism N] [--max-parallelism N] [--data-volume-per-task SIZE]]
                [--workers N] [--slots N] [--pipelined-shuffle memory|network] [--buffer-timeout MS] [--exchange-mode MODE] [--restart-strategy S ...]
                [--failover-strategy F] [--task-memory SIZE] [--spill-dir PATH]
                [--checkpoint-interval D [--checkpoint-mode M] [--from-checkpoint latest|ID] ...]
                [--inject-faults SPEC] [--job-id ID] [--ui [PORT]] [--plan-only] [--json] [-- job args...]

Runs a batch job: a .ts or .js module whose default export is defineJob((ctx) => ...). Its pipelined
regions are scheduled as their blocking inputs finish; pipelined exchanges go through the in-memory
shuffle inside one executor, or — on two or more workers — through the network shuffle, a region's
tasks spread over the workers; blocking ones through the persisted shuffle named by --store and --meta.

Options:
  --parallelism N           default parallelism of the job's operators (default: the number of cores);
                            auto: decided at run time from the data (see Adaptive parallelism below)
  --store URL               where blocking partitions are stored: file:///abs/dir or s3://bucket/prefix
                            (default: $WEFT_STORE, else ./.weft/shuffle)
  --meta URL                partition metadata: sqlite:///abs/file.db, redis://host:port/db or
                            redis+sentinel://host:port[,host:port…]/name/db (writes wait for a replica)
                            (default: $WEFT_META, else ./.weft/shuffle-meta.db)
  --shuffle-servers URL     push blocking partitions to the \`weft shuffle-server\` pool registered in this
                            Redis (redis://host:port/db or redis+sentinel://…; default: $WEFT_SHUFFLE_SERVERS) instead of --store/--meta;
                            job tokens are signed with $WEFT_SHUFFLE_SECRET. --store s3://… then names the
                            servers' S3 tier, read when a server is gone.
  --shuffle-replicas N      with --shuffle-servers: push every blocking partition to N servers (default 1,
                            at most ${MAX_SHUFFLE_REPLICAS}), on different hosts where the pool has them; a reader uses any copy,
                            so one server's death re-runs no task. More than the live servers: a warning,
                            and as many as there are (the summary says how many were used).
  --executor KIND           workers (default): a pool of worker processes; inprocess: this process only
  --cluster URL             run on the task executors registered in this Redis (redis://host:port/db;
                            default: $WEFT_CLUSTER) instead of local processes (docs/cluster.md). The
                            job's code travels with it (bundled, stored in that Redis by sha256);
                            deployments are signed with $WEFT_SHUFFLE_SECRET (or --secret-file).
                            Needs a blocking shuffle every host reaches: --store s3://… with
                            --meta redis://…, or --shuffle-servers
  --cluster-startup-timeout MS
                            with --cluster: how long to wait for a first executor (default 30000);
                            none by then: the job fails, exit 1
  --secret-file PATH        with --cluster: file holding the shared secret
  --workers N               worker processes (default: the number of cores)
  --slots N                 regions one executor runs at once (default: 1 per worker; with
                            --executor inprocess, the number of cores); a region spread over
                            workers takes one slot on each
  --pipelined-shuffle S     memory: each pipelined region runs whole in one executor; network: worker
                            processes serve pipelined partitions to each other over TCP
                            (@weft/shuffle-network, on 127.0.0.1) and a region's tasks are spread over
                            them (default: network with --workers 2 or more, else memory; with
                            --cluster, network spreads regions over executors holding one slot)
  --buffer-timeout MS       a pipelined exchange's partly filled buffer goes to its consumer once it is
                            this old (Flink's execution.buffer-timeout; the shuffles' flushTimeoutMs);
                            0: every record at once (default 100)
  --exchange-mode MODE      ${EXCHANGE_MODES.join(' | ')}
                            (default: the job's own, else ALL_EDGES_BLOCKING)
  --no-release-during-job   keep every blocking partition until the job ends (default: a result's
                            partitions are released as soon as every region reading them finished)
  --job-id ID               name the run (default: a fresh random id). Every run's events go to the job
                            event log in the --meta store (with --shuffle-servers: the servers' Redis);
                            when it holds an unfinished run of ID, the same command resumes it: tasks
                            that finished and whose partitions still exist are not run again. A
                            finished ID, another job module or other job arguments are refused (exit 2)
  --standby                 with --job-id: a standby job master — wait while another run of ID holds its
                            lease (renewed every second), take the job over (resume it) once the lease
                            goes unrenewed for --standby-takeover-ms MS (default ${DEFAULT_STANDBY_TAKEOVER_MS}); a run that ends
                            meanwhile: nothing to do (exit 0 if it succeeded, else 1)
${RUN_UI_USAGE}
  --json                    print a machine-readable summary on stdout (with every failover)
  --plan-only               print the job's topology (docs/DESIGN.md contract 1: what \`weft plan\` reads;
                            one line with --json) and exit without running it; a job the run would
                            refuse (the same flags) is refused the same way, exit 2
  -h, --help                show this help

${RECOVERY_USAGE}

${MEMORY_USAGE}

${ADAPTIVE_USAGE}

${CHECKPOINT_USAGE}

${APPROXIMATE_USAGE}

Every failover is reported: the task that failed and why (error code and message), the tasks restarted
(exactly what \`weft plan <topology> --fail <task> [--lost <partition>]...\` predicts for the job's
topology) and the work that saved against restarting every task.

Fault injection:
  --inject-faults SPEC      damage the job on purpose, to watch it recover. Without any restart flag,
                            the restart strategy is then fixed-delay with ${FAULT_RESTART_ATTEMPTS} attempts, ${FAULT_RESTART_DELAY_MS} ms apart.
  ${FAULT_SPEC_GRAMMAR.replace(/\n/g, '\n  ')}

Arguments after -- go to the job (ctx.args); the examples take --input <path> and --output <path>.
A job's inputs and outputs may be s3://bucket/key URLs as well as paths: an input object (or the objects
under a prefix) is split by byte ranges and read with ranged GETs; an output is published all or
nothing when the job succeeds (the key never exists half-written).
S3 endpoint and credentials (for --store s3://… and s3:// inputs and outputs alike) come from
AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.

Exit codes: 0 the job succeeded; 1 the job failed; 2 bad usage, missing module, invalid job or job
arguments, or an input the job cannot read.
`;
