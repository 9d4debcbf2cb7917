// The dispatcher and `weft plan` in-process (fast paths and edge cases); weft-plan.test.ts spawns the real command.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CliIo, type Command, runCli } from '@weft/cli';

function io(cwd: string): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    cwd,
    env: {},
    out: () => out,
    err: () => err,
  };
}

describe('weft dispatcher', () => {
  it('prints usage on stderr and exits 2 without a command', async () => {
    const t = io('/');
    assert.equal(await runCli([], t), 2);
    assert.match(t.err(), /missing command/);
    assert.match(t.err(), /Usage: weft <command>/);
  });

  it("after a usage error of a command with a long usage (weft run), keeps the error in sight: its synopsis and where the rest is", async () => {
    const t = io('/');
    assert.equal(await runCli(['run', 'job.ts', '--checkpoint-interval', '0'], t), 2);
    const [error, ...rest] = t.err().split('\n');
    assert.match(error as string, /^weft run: --checkpoint-interval must be a duration > 0/);
    assert.match(t.err(), /\nUsage: weft run <job module>/);
    assert.match(t.err(), /Run 'weft run --help' for every option\.\n$/);
    assert.ok(rest.length < 20, `${rest.length} lines after the error`);
    assert.doesNotMatch(t.err(), /Options:/);
  });

  it('answers `weft help plan` with the plan usage', async () => {
    const t = io('/');
    assert.equal(await runCli(['help', 'plan'], t), 0);
    assert.match(t.out(), /^Usage: weft plan/);
  });

  it('prints its version', async () => {
    const t = io('/');
    assert.equal(await runCli(['--version'], t), 0);
    assert.match(t.out(), /^weft \d+\.\d+\.\d+\n$/);
  });

  it('dispatches to any registered command and maps a crash to exit 1', async () => {
    const echo: Command = { name: 'echo', summary: 'echo', usage: 'Usage: weft echo\n', run: async (args, o) => (o.stdout.write(args.join(' ')), 0) };
    const crash: Command = { name: 'crash', summary: 'crash', usage: 'Usage: weft crash\n', run: async () => { throw new Error('kaboom'); } };
    const t = io('/');
    assert.equal(await runCli(['echo', 'a', '--', '--help'], t, [echo, crash]), 0);
    assert.equal(t.out(), 'a -- --help');
    assert.equal(await runCli(['crash'], t, [echo, crash]), 1);
    assert.match(t.err(), /weft crash: internal error: Error: kaboom/);
  });
});

describe('weft plan (in-process)', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-cli-'));
    await writeFile(join(dir, 'ok.json'), JSON.stringify({ vertices: [{ id: 'a', parallelism: 2 }], edges: [] }));
    await writeFile(join(dir, 'chain.json'), JSON.stringify({ vertices: [{ id: 'a', parallelism: 2 }, { id: 'b', parallelism: 2 }], edges: [{ source: 'a', target: 'b', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' }] }));
    await writeFile(join(dir, 'cycle.json'), JSON.stringify({ vertices: [{ id: 'a', parallelism: 1 }, { id: 'b', parallelism: 1 }], edges: [
      { source: 'a', target: 'b', distribution: 'POINTWISE', partitionType: 'BLOCKING' },
      { source: 'b', target: 'a', distribution: 'POINTWISE', partitionType: 'BLOCKING' },
    ] }));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('restarts only the failed task with --strategy individual when tasks exchange no data', async () => {
    const t = io(dir);
    assert.equal(await runCli(['plan', 'ok.json', '--json', '--fail', 'a#1', '--strategy', 'individual'], t), 0);
    assert.deepEqual(JSON.parse(t.out()), { regions: [['a#0'], ['a#1']], restart: ['a#1'] });
  });

  const cases: Array<[string, string[], RegExp]> = [
    ['a missing file argument', ['plan'], /missing <topology\.json>/],
    ['two file arguments', ['plan', 'ok.json', 'ok.json'], /expected one topology file/],
    ['a bad --strategy', ['plan', 'ok.json', '--fail', 'a#0', '--strategy', 'everything'], /--strategy must be one of region, all, individual/],
    ['--strategy individual on a topology with edges', ['plan', 'chain.json', '--fail', 'a#0', '--strategy', 'individual'], /the individual failover strategy restarts only the failed task, but this job's tasks exchange data \(edge "a->b"/],
    ['--lost without --fail', ['plan', 'ok.json', '--lost', 'x#0'], /--lost needs --fail/],
    ['--fail without a value', ['plan', 'ok.json', '--fail'], /--fail/],
    ['a cyclic topology', ['plan', 'cycle.json'], /cycle\.json: invalid topology: edges\[1\]: closes a cycle in the job graph/],
    ['a directory as the topology', ['plan', '.'], /cannot read topology file \.: it is a directory/],
  ];
  for (const [what, args, message] of cases) {
    it(`exits 2 with a clear message for ${what}`, async () => {
      const t = io(dir);
      assert.equal(await runCli(args, t), 2);
      assert.match(t.err(), message);
      assert.equal(t.out(), '');
    });
  }

  it('prints one region per subtask for a job without edges', async () => {
    const t = io(dir);
    assert.equal(await runCli(['plan', 'ok.json', '--json', '--fail', 'a#1'], t), 0);
    assert.deepEqual(JSON.parse(t.out()), { regions: [['a#0'], ['a#1']], restart: ['a#1'] });
  });
});
