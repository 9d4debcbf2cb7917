// Seeded fault runs on the examples, in process over the persisted blocking shuffle (a local directory +
// SQLite): a task throws at a random record, a committed partition's object is deleted, or one of its
// bytes is flipped. Every run must produce exactly the output of a fault-free run, restart exactly what
// `weft plan --fail` predicts for each failover, and leave no object behind. The file prints
// "fault runs: N correct of N" and the tasks region failover restarted against restarting all.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FaultKind } from '@weft/cli/faults';
import type { ExchangeMode, FailoverStrategyName } from '@weft/engine';
import { checkBlastRadius, comparableCollected, comparableOutput, EXAMPLES, filesUnder, runExample, writeTopology } from './support/fault-runs.js';

/** Runs per example: 3 examples × 70 = 210 seeded fault runs. */
const RUNS_PER_EXAMPLE = Number(process.env['WEFT_FAULT_RUNS_PER_EXAMPLE'] ?? 70);
const PARALLELISM = Number(process.env['WEFT_FAULT_RUNS_PARALLELISM'] ?? 4);
const KINDS: readonly FaultKind[] = ['throw', 'delete-partition', 'corrupt-partition'];

/** Region-strategy failovers: tasks reset against all tasks, tasks run again against those started. */
interface Radius {
  failovers: number;
  restarted: number;
  total: number;
  runAgain: number;
  deployed: number;
}

interface Tally {
  runs: number;
  correct: number;
  failovers: number;
  readonly region: Radius;
  readonly byKind: Map<string, Radius>;
}

function newRadius(): Radius {
  return { failovers: 0, restarted: 0, total: 0, runAgain: 0, deployed: 0 };
}

function describeRadius(r: Radius): string {
  return `${r.failovers} failovers: reset ${r.restarted} of ${r.total} tasks (${(r.restarted / r.total).toFixed(3)}), ran again ${r.runAgain} of ${r.deployed} started (${(r.runAgain / r.deployed).toFixed(3)})`;
}

describe('seeded fault runs on the examples (in process, local directory + SQLite)', () => {
  let dir = '';
  const tally: Tally = { runs: 0, correct: 0, failovers: 0, region: newRadius(), byKind: new Map() };
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-fault-runs-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    process.stdout.write(`# fault runs: ${tally.correct} correct of ${tally.runs} (${tally.failovers} failovers)\n`);
    process.stdout.write(`# region failover against restarting all: ${describeRadius(tally.region)}\n`);
    for (const [key, r] of tally.byKind) process.stdout.write(`#   ${key}: ${describeRadius(r)}\n`);
  });

  for (const example of EXAMPLES) {
    it(`${example.name}: ${RUNS_PER_EXAMPLE} seeded runs with a task throwing, a partition deleted or corrupted recover exactly`, async () => {
      const base = join(dir, example.name);
      const clean = await runExample({ example, dir: base, output: join(base, 'clean.out'), parallelism: PARALLELISM });
      assert.equal(clean.result.status, 'succeeded', String(clean.result.error?.stack));
      assert.equal(clean.result.failovers.length, 0);
      const expected = await comparableOutput(join(base, 'clean.out'), example.comparison);
      const expectedCollected = comparableCollected(clean.result);
      const topologyFile = await writeTopology(join(base, 'topology.json'), clean.result.topology);
      const pipelinedTopology = new Map<ExchangeMode, string>();

      for (let seed = 1; seed <= RUNS_PER_EXAMPLE; seed++) {
        const kind = KINDS[seed % KINDS.length] as FaultKind;
        // Most runs fail over by region; every 7th restarts all; every 5th pipelines its pointwise edges.
        const failover: FailoverStrategyName = seed % 7 === 0 ? 'all' : 'region';
        const exchangeMode: ExchangeMode | undefined = seed % 5 === 0 ? 'POINTWISE_EDGES_PIPELINED' : undefined;
        const label = `${example.name} seed=${seed} ${kind} (${failover}${exchangeMode === undefined ? '' : `, ${exchangeMode}`})`;
        const output = join(base, `run-${seed}.out`);
        tally.runs++;
        const { result, harness, storeDir } = await runExample({ example, dir: base, output, spec: { seed, faults: [{ kind }] }, failover, parallelism: PARALLELISM, ...(exchangeMode === undefined ? {} : { exchangeMode }) });
        assert.equal(result.status, 'succeeded', `${label}: ${String(result.error?.stack)}`);
        const fault = harness?.faults[0];
        assert.ok(fault?.fired, `${label}: the fault fired`);
        assert.ok(result.failovers.length >= 1, `${label}: at least one failover`);
        const first = result.failovers[0];
        if (kind === 'throw') assert.equal(first?.error.code, 'WEFT_ERR_INJECTED_FAULT', label);
        else {
          assert.deepEqual(first?.lostPartitions, [fault?.target], `${label}: the consumer's failure names the damaged partition`);
          assert.equal(first?.error.code, kind === 'delete-partition' ? 'SHF_ERR_PARTITION_NOT_FOUND' : 'SHF_ERR_DATA_CORRUPTED', label);
        }
        assert.equal(await comparableOutput(output, example.comparison), expected, `${label}: output equals the fault-free run's`);
        assert.equal(comparableCollected(result), expectedCollected, `${label}: collected values equal the fault-free run's`);
        let topology = topologyFile;
        if (exchangeMode !== undefined) {
          topology = pipelinedTopology.get(exchangeMode) ?? (await writeTopology(join(base, `topology-${exchangeMode}.json`), result.topology));
          pipelinedTopology.set(exchangeMode, topology);
        }
        const radius = await checkBlastRadius(result, topology, label);
        assert.deepEqual(await filesUnder(storeDir), [], `${label}: no object left in the store`);
        tally.failovers += result.failovers.length;
        if (failover === 'region') {
          const key = `${example.name} ${kind}`;
          const byKind = tally.byKind.get(key) ?? newRadius();
          tally.byKind.set(key, byKind);
          for (const r of [tally.region, byKind]) {
            r.failovers += result.failovers.length;
            r.restarted += radius.restarted;
            r.total += radius.total;
            r.runAgain += radius.runAgain;
            r.deployed += radius.deployed;
          }
        } else {
          assert.ok(result.failovers.every((f) => f.tasksToRestart.length === f.tasksTotal), `${label}: restart-all restarts every task`);
        }
        await rm(output, { force: true });
        tally.correct++;
      }
    });
  }

  it('region failover restarts at most half the tasks restarting all would, over these runs', () => {
    const { restarted, total, runAgain, deployed } = tally.region;
    assert.ok(total > 0 && deployed > 0);
    // Tasks reset (the blast radius, what `weft plan --fail` predicts) against every task of the job...
    assert.ok(restarted <= total / 2, `region reset ${restarted} of ${total} tasks`);
    // ...and tasks whose work was done again against every task that had started (what restart-all redoes).
    assert.ok(runAgain <= deployed / 2, `region ran ${runAgain} tasks again of ${deployed} started`);
  });
});
