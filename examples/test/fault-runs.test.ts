// Seeded fault runs on the examples, in process over the persisted blocking shuffle (a local directory +
// SQLite): a task throws at a random record, a committed partition's object is deleted, or one of its
// bytes is flipped. Every run must produce byte for byte the output of a fault-free run (and the same
// collected values), restart exactly what `weft plan --fail` predicts for each failover, and leave no
// object behind.
//
// Those runs are all-BLOCKING: every region is one task. So that a task also fails inside a region of
// several tasks joined by pipelined exchanges (its siblings cancelled mid-stream, the in-memory pipelined
// partitions given up and produced anew), one seed in five also runs with a task throwing under
// ALL_EDGES_PIPELINED, checked the same way against a fault-free run in that mode. Only `throw` applies
// there: every example is then a single region (the BLOCKING pointwise edge terasort and the TPC-H job
// keep stays inside it), so no partition is read by another region for delete-/corrupt-partition to hit.
// FORWARD_EDGES_PIPELINED and POINTWISE_EDGES_PIPELINED would add nothing: on these examples they plan
// every edge BLOCKING, as ALL_EDGES_BLOCKING does (their forward edges are chained, their pointwise edges
// kept BLOCKING).
//
// Issue 5's target "region failover re-executes at most half the tasks that restart-all does" is checked
// per example with its literal meaning — tasks that run again — measured the same way on both sides:
// some seeds run twice, once failing over by region and once restarting all (the same seed plants the
// same fault at the same record or partition), and the tasks each run actually ran again (reset tasks
// that had been deployed) are compared. The blast radius (tasks reset, whether they had started or not:
// what `weft plan --fail` predicts) is a different figure; it is printed, and checked against the
// prediction on every failover, but not against half: for a lost partition of an all-to-all edge it is
// more than half of terasort's tasks by DESIGN.md's semantics (bench/README.md shows why).
//
// Every run releases partitions as the job goes (the engine's default), except the paired ones: issue 5's
// target is about partitions kept until the job ends, so each paired seed runs region failover and
// restart-all with the release off; the region run of that seed with the release on is paired with the
// same restart-all run and printed ("released as the job goes"), not checked against half — a lost
// partition's producer that finds its own inputs released re-runs their producers too (Flink's rule).
//
// The file prints "fault runs: N correct of N", then per example and per fault kind the tasks run again
// (region against restart-all, paired runs), and over every region run the tasks run again against the
// tasks started when the failure happened (what restart-all would have run again then) and the blast
// radius against all tasks.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FaultKind } from '@weft/cli/faults';
import type { ExchangeMode, FailoverStrategyName, JobResult } from '@weft/engine';
import { assertSameOutput, type BlastRadius, checkBlastRadius, comparableCollected, EXAMPLES, filesUnder, runExample, writeTopology } from './support/fault-runs.js';

/**
 * Region-failover runs per fault kind and example: 3 kinds × 16 × 3 examples = 144, plus the paired
 * restart-all runs and the ALL_EDGES_PIPELINED runs: 234 in all (the file prints the count), above
 * issue 5's 200; WEFT_FAULT_RUNS_PER_KIND=20 runs 288.
 */
const RUNS_PER_KIND = Number(process.env['WEFT_FAULT_RUNS_PER_KIND'] ?? 16);
const PARALLELISM = Number(process.env['WEFT_FAULT_RUNS_PARALLELISM'] ?? 4);
const KINDS: readonly FaultKind[] = ['throw', 'delete-partition', 'corrupt-partition'];
/** Seeds that also run restarting all, for the paired comparison: one in five (4 per kind and example). */
const isPaired = (seed: number): boolean => seed % 5 === 2;
/** Seeds that also run with a task throwing inside a region of several pipelined tasks: one in five. */
const isPipelined = (seed: number): boolean => seed % 5 === 1;
const PIPELINED_MODE: ExchangeMode = 'ALL_EDGES_PIPELINED';

/** Summed over runs. */
interface Figures {
  runs: number;
  failovers: number;
  /** Tasks reset (blast radius) and all tasks of the job, per failover. */
  reset: number;
  total: number;
  /** Tasks run again, and tasks started when each failure happened. */
  runAgain: number;
  deployed: number;
}

/** What the fault runs of one exchange mode are checked against. */
interface Baseline {
  readonly expected: Buffer;
  readonly collected: string;
  readonly topologyFile: string;
  readonly regions: number;
}

/** Paired runs: tasks run again by region failover and by restarting all, for the same faults. */
interface Paired {
  runs: number;
  region: number;
  all: number;
}

const newFigures = (): Figures => ({ runs: 0, failovers: 0, reset: 0, total: 0, runAgain: 0, deployed: 0 });
const newPaired = (): Paired => ({ runs: 0, region: 0, all: 0 });
const ratio = (a: number, b: number): string => (b === 0 ? 'n/a' : (a / b).toFixed(3));

function addRun(figures: Figures, result: JobResult, radius: BlastRadius): void {
  figures.runs++;
  figures.failovers += result.failovers.length;
  figures.reset += radius.restarted;
  figures.total += radius.total;
  figures.runAgain += radius.runAgain;
  figures.deployed += radius.deployed;
}

function describePaired(p: Paired): string {
  return `region ran ${p.region} tasks again, restart-all ${p.all}, over ${p.runs} paired faults (${ratio(p.region, p.all)})`;
}

function describeFigures(f: Figures): string {
  return `${f.runs} region runs, ${f.failovers} failovers: ran again ${f.runAgain} of ${f.deployed} started (${ratio(f.runAgain, f.deployed)}); blast radius ${f.reset} of ${f.total} tasks (${ratio(f.reset, f.total)})`;
}

describe('seeded fault runs on the examples (in process, local directory + SQLite)', () => {
  let dir = '';
  let runs = 0;
  let correct = 0;
  const figures = new Map<string, Figures>();
  const paired = new Map<string, Paired>();
  const entry = <T>(map: Map<string, T>, key: string, create: () => T): T => {
    let value = map.get(key);
    if (value === undefined) map.set(key, (value = create()));
    return value;
  };
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-fault-runs-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    process.stdout.write(`# fault runs: ${correct} correct of ${runs}\n`);
    process.stdout.write('# tasks run again, region failover against restart-all (paired runs, same seed and fault):\n');
    for (const [key, p] of paired) process.stdout.write(`#   ${key}: ${describePaired(p)}\n`);
    process.stdout.write('# every region run: tasks run again against those started at the failure, and the blast radius against all tasks:\n');
    for (const [key, f] of figures) process.stdout.write(`#   ${key}: ${describeFigures(f)}\n`);
  });

  for (const example of EXAMPLES) {
    const runsHere = RUNS_PER_KIND * KINDS.length;
    const pipelinedRuns = Array.from({ length: runsHere }, (_, i) => i + 1).filter(isPipelined).length;
    it(`${example.name}: ${runsHere} seeded runs with a task throwing, a partition deleted or corrupted, and ${pipelinedRuns} with a task throwing inside a pipelined region (${PIPELINED_MODE}), recover exactly, and region failover runs at most half the tasks again that restarting all does`, async () => {
      const base = join(dir, example.name);
      /** A fault-free run in `exchangeMode`: the output, collected values and topology fault runs are checked against. */
      const cleanRun = async (exchangeMode?: ExchangeMode): Promise<Baseline> => {
        const name = exchangeMode ?? 'default';
        const clean = await runExample({ example, dir: base, output: join(base, `clean-${name}.out`), parallelism: PARALLELISM, ...(exchangeMode === undefined ? {} : { exchangeMode }) });
        assert.equal(clean.result.status, 'succeeded', String(clean.result.error?.stack));
        assert.equal(clean.result.failovers.length, 0);
        return {
          expected: await readFile(join(base, `clean-${name}.out`)),
          collected: comparableCollected(clean.result),
          topologyFile: await writeTopology(join(base, `topology-${name}.json`), clean.result.topology),
          regions: clean.result.regions,
        };
      };
      const blocking = await cleanRun();
      const pipelined = await cleanRun(PIPELINED_MODE);
      assert.ok(pipelined.regions < blocking.regions, `${example.name}: ${PIPELINED_MODE} joins tasks into regions`);

      /** One run of `seed` under `failover` (in `exchangeMode` when given), checked; what it ran again. */
      const faultRun = async (seed: number, kind: FaultKind, failover: FailoverStrategyName, exchangeMode?: ExchangeMode, release = true): Promise<{ result: JobResult; radius: BlastRadius }> => {
        const { expected, collected: expectedCollected, topologyFile } = exchangeMode === undefined ? blocking : pipelined;
        const label = `${example.name} seed=${seed} ${kind} (${failover}${exchangeMode === undefined ? '' : `, ${exchangeMode}`}${release ? '' : ', kept until the end'})`;
        const output = join(base, `run-${seed}-${failover}-${exchangeMode ?? 'default'}-${release}.out`);
        runs++;
        const { result, harness, storeDir } = await runExample({
          example,
          dir: base,
          output,
          spec: { seed, faults: [{ kind }] },
          failover,
          parallelism: PARALLELISM,
          releasePartitionsDuringJob: release,
          ...(exchangeMode === undefined ? {} : { exchangeMode }),
        });
        assert.equal(result.status, 'succeeded', `${label}: ${String(result.error?.stack)}`);
        const fault = harness?.faults[0];
        assert.ok(fault?.fired, `${label}: the fault fired`);
        assert.ok(result.failovers.length >= 1, `${label}: at least one failover`);
        const first = result.failovers[0];
        if (kind === 'throw') assert.equal(first?.error.code, 'WEFT_ERR_INJECTED_FAULT', label);
        else {
          // Named first; any others are partitions released during the job (their consumers had all finished)
          // that the failover walk met: their producers re-run too.
          assert.equal(first?.lostPartitions[0], fault?.target, `${label}: the consumer's failure names the damaged partition`);
          if ((first?.lostPartitions.length ?? 0) > 1) assert.ok(result.partitionsReleasedDuringJob > 0, `${label}: ${first?.lostPartitions.join(', ')} lost, though none was released`);
          assert.equal(first?.error.code, kind === 'delete-partition' ? 'SHF_ERR_PARTITION_NOT_FOUND' : 'SHF_ERR_DATA_CORRUPTED', label);
        }
        if (exchangeMode !== undefined) assert.ok((first?.tasksToRestart.length ?? 0) > 1, `${label}: the failed task's region has several tasks`);
        await assertSameOutput(output, expected, label);
        assert.equal(comparableCollected(result), expectedCollected, `${label}: collected values equal the fault-free run's`);
        const radius = await checkBlastRadius(result, topologyFile, label);
        if (failover === 'all') assert.ok(result.failovers.every((f) => f.tasksToRestart.length === f.tasksTotal), `${label}: restart-all restarts every task`);
        assert.deepEqual(await filesUnder(storeDir), [], `${label}: no object left in the store`);
        await rm(output, { force: true });
        correct++;
        return { result, radius };
      };

      const here = entry(paired, example.name, newPaired);
      for (let seed = 1; seed <= runsHere; seed++) {
        const kind = KINDS[seed % KINDS.length] as FaultKind;
        const region = await faultRun(seed, kind, 'region');
        for (const key of [example.name, `${example.name} ${kind}`]) addRun(entry(figures, key, newFigures), region.result, region.radius);
        if (isPipelined(seed)) {
          const run = await faultRun(seed, 'throw', 'region', PIPELINED_MODE);
          addRun(entry(figures, `${example.name} throw, ${PIPELINED_MODE}`, newFigures), run.result, run.radius);
        }
        if (!isPaired(seed)) continue;
        // Issue 5's target compares the strategies with every partition kept until the job ends; released as
        // the job goes (the default), a lost partition's producer may find its own inputs released and re-run
        // their producers too (Flink's semantics): that figure is printed beside it.
        const kept = await faultRun(seed, kind, 'region', undefined, false);
        const all = await faultRun(seed, kind, 'all', undefined, false);
        for (const p of [here, entry(paired, `${example.name} ${kind}`, newPaired)]) {
          p.runs++;
          p.region += kept.radius.runAgain;
          p.all += all.radius.runAgain;
        }
        for (const p of [entry(paired, `${example.name}, released as the job goes`, newPaired), entry(paired, `${example.name} ${kind}, released as the job goes`, newPaired)]) {
          p.runs++;
          p.region += region.radius.runAgain;
          p.all += all.radius.runAgain;
        }
      }
      assert.ok(here.runs > 0 && here.all > 0, 'restart-all ran tasks again');
      assert.ok(here.region <= here.all / 2, `${example.name}: ${describePaired(here)}`);
    });
  }
});
