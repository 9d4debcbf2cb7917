// Spawns the real `weft` command through its bin shim (no build), as `npx weft` would run it.
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/weft.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function weft(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

const designExample = {
  vertices: [
    { id: 'v1', parallelism: 4 },
    { id: 'v2', parallelism: 3 },
    { id: 'v3', parallelism: 2 },
  ],
  edges: [
    { source: 'v1', target: 'v2', distribution: 'POINTWISE', partitionType: 'PIPELINED' },
    { source: 'v2', target: 'v3', distribution: 'POINTWISE', partitionType: 'BLOCKING' },
    { source: 'v1', target: 'v3', distribution: 'POINTWISE', partitionType: 'PIPELINED' },
  ],
};
const fanIn = {
  vertices: ['v1', 'v2', 'v3'].map((id) => ({ id, parallelism: 1 })),
  edges: [
    { id: 'rp1', source: 'v1', target: 'v3', distribution: 'POINTWISE', partitionType: 'BLOCKING' },
    { id: 'rp2', source: 'v2', target: 'v3', distribution: 'POINTWISE', partitionType: 'BLOCKING' },
  ],
};
const sorted = (regions: string[][]) => regions.map((r) => [...r].sort()).sort((a, b) => (a[0] as string).localeCompare(b[0] as string));

describe('weft plan (spawned through bin/weft.js)', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-plan-'));
    await writeFile(join(dir, 'design.json'), JSON.stringify(designExample));
    await writeFile(join(dir, 'fan-in.json'), JSON.stringify(fanIn));
    await writeFile(join(dir, 'bad-enum.json'), JSON.stringify({ ...fanIn, edges: [fanIn.edges[0], { ...fanIn.edges[1], partitionType: 'SOMETIMES' }] }));
    await writeFile(join(dir, 'not-json.json'), '{"vertices": [');
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints the regions as JSON and exits 0', async () => {
    const run = await weft(['plan', 'design.json', '--json'], dir);
    assert.equal(run.code, 0, run.stderr);
    const out = JSON.parse(run.stdout) as { regions: string[][] };
    assert.deepEqual(Object.keys(out), ['regions']);
    assert.deepEqual(sorted(out.regions), [
      ['v1#0', 'v1#1', 'v2#0', 'v2#1', 'v3#0'],
      ['v1#2', 'v1#3', 'v2#2', 'v3#1'],
    ]);
  });

  it('adds the restart set for --fail, following --lost partitions', async () => {
    const plain = await weft(['plan', join(dir, 'fan-in.json'), '--json', '--fail', 'v3#0'], tmpdir());
    assert.equal(plain.code, 0, plain.stderr);
    assert.deepEqual((JSON.parse(plain.stdout) as { restart: string[] }).restart, ['v3#0']);
    const lost = await weft(['plan', 'fan-in.json', '--json', '--fail', 'v2#0', '--lost', 'rp1#0'], dir);
    assert.equal(lost.code, 0, lost.stderr);
    assert.deepEqual([...(JSON.parse(lost.stdout) as { restart: string[] }).restart].sort(), ['v1#0', 'v2#0', 'v3#0']);
  });

  it('restarts everything with --strategy all', async () => {
    const run = await weft(['plan', 'fan-in.json', '--json', '--fail', 'v3#0', '--strategy', 'all'], dir);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual([...(JSON.parse(run.stdout) as { restart: string[] }).restart].sort(), ['v1#0', 'v2#0', 'v3#0']);
  });

  it('prints a summary for people without --json', async () => {
    const run = await weft(['plan', 'design.json', '--fail', 'v3#1'], dir);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /Pipelined regions: 2/);
    assert.match(run.stdout, /sizes: 5, 4/);
    assert.match(run.stdout, /restart 4 of 9 tasks \(44%\) in 1 region/);
  });

  it('lists every region and every task to restart without --json, wrapped, none left out', async () => {
    // 30 blocking pointwise pairs (60 one-task regions) and a 2 x 40 pipelined all-to-all region
    const wide = {
      vertices: [
        { id: 'source', parallelism: 30 },
        { id: 'sink', parallelism: 30 },
        { id: 'left-side-with-a-long-name', parallelism: 40 },
        { id: 'right', parallelism: 40 },
      ],
      edges: [
        { source: 'source', target: 'sink', distribution: 'POINTWISE', partitionType: 'BLOCKING' },
        { source: 'left-side-with-a-long-name', target: 'right', distribution: 'ALL_TO_ALL', partitionType: 'PIPELINED' },
      ],
    };
    await writeFile(join(dir, 'wide.json'), JSON.stringify(wide));
    const run = await weft(['plan', 'wide.json', '--fail', 'right#3'], dir);
    assert.equal(run.code, 0, run.stderr);
    const text = run.stdout;
    assert.doesNotMatch(text, /…|more/, 'nothing elided');
    assert.match(text, /^Pipelined regions: 61$/m);
    const listed = (block: string): string[] => block.replace(/^.*?: /, '').split(/,\s*/).filter((id) => id !== '');
    const [regionPart, failurePart] = text.split(/^Failure of /m) as [string, string];
    const regionBlocks = regionPart.split(/\n(?= {2}region \d+ )/).slice(1);
    assert.equal(regionBlocks.length, 61);
    const everyId = regionBlocks.flatMap((block) => listed(block.trim().replace(/\s+/g, ' ')));
    const expected = wide.vertices.flatMap((v) => Array.from({ length: v.parallelism }, (_, i) => `${v.id}#${i}`));
    assert.deepEqual([...everyId].sort(), [...expected].sort(), 'each task in exactly one listed region');
    const restart = listed(failurePart.split('\n').slice(1).join(' ').trim().replace(/\s+/g, ' '));
    assert.equal(restart.length, 80);
    assert.deepEqual(new Set(restart), new Set(expected.filter((id) => !id.startsWith('source') && !id.startsWith('sink'))));
    for (const line of text.split('\n')) assert.ok(line.length <= 100, `wrapped at 100 columns: ${line}`);
  });

  it('says a topology without edges has no result partitions when --lost names one', async () => {
    await writeFile(join(dir, 'no-edges.json'), JSON.stringify({ vertices: [{ id: 'a', parallelism: 2 }], edges: [] }));
    const run = await weft(['plan', 'no-edges.json', '--fail', 'a#0', '--lost', 'x#0'], dir);
    assert.equal(run.code, 2);
    assert.equal(run.stderr, 'weft plan: --lost: unknown result partition "x#0"; the topology has no edges, so it has no result partitions\n');
  });

  it('refuses an invalid topology with exit 2, naming the field', async () => {
    const run = await weft(['plan', 'bad-enum.json', '--json'], dir);
    assert.equal(run.code, 2);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /edges\[1\]\.partitionType/);
    assert.match(run.stderr, /"SOMETIMES"/);
  });

  it('refuses an unknown --fail vertex and an unknown --lost partition with exit 2', async () => {
    const vertex = await weft(['plan', 'fan-in.json', '--fail', 'v9#0'], dir);
    assert.equal(vertex.code, 2);
    assert.match(vertex.stderr, /--fail: unknown execution vertex "v9#0"/);
    const partition = await weft(['plan', 'fan-in.json', '--fail', 'v3#0', '--lost', 'rp1#4'], dir);
    assert.equal(partition.code, 2);
    assert.match(partition.stderr, /--lost: unknown result partition "rp1#4"/);
  });

  it('refuses a missing file and bad JSON with exit 2, naming the path', async () => {
    const missing = await weft(['plan', 'nowhere.json'], dir);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /nowhere\.json/);
    const bad = await weft(['plan', 'not-json.json'], dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /not-json\.json is not valid JSON/);
  });

  it('answers an unknown command or flag with usage on stderr and exit 2', async () => {
    const command = await weft(['frobnicate'], dir);
    assert.equal(command.code, 2);
    assert.match(command.stderr, /unknown command "frobnicate"/);
    assert.match(command.stderr, /Usage: weft <command>/);
    const flag = await weft(['plan', 'design.json', '--bogus'], dir);
    assert.equal(flag.code, 2);
    assert.match(flag.stderr, /--bogus/);
    assert.match(flag.stderr, /Usage: weft plan/);
  });

  it('prints help on stdout with exit 0', async () => {
    const help = await weft(['--help'], dir);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /plan\s+print the pipelined regions/);
    const plan = await weft(['plan', '--help'], dir);
    assert.equal(plan.code, 0);
    assert.match(plan.stdout, /Usage: weft plan <topology\.json> \[--json\]/);
  });

  it('passes a signal on to the command it runs, and dies of it too', { skip: spawnSync('sh', ['-c', 'command -v mkfifo']).status !== 0 }, async () => {
    // A FIFO nobody writes to keeps `weft plan` waiting in readFile, so the child is alive when signalled.
    const fifo = join(dir, 'waiting.json');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    // from source, where the shim runs the command as its child (from a fresh build it runs it in process)
    const shim = spawn(process.execPath, [bin, 'plan', fifo, '--json'], { stdio: 'ignore', env: { ...process.env, WEFT_FROM_SOURCE: '1' } });
    let child = 0;
    try {
      const childrenFile = `/proc/${shim.pid}/task/${shim.pid}/children`;
      for (let i = 0; i < 500 && child === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        child = existsSync(childrenFile) ? Number(readFileSync(childrenFile, 'utf8').trim().split(/\s+/)[0] || 0) : 0;
      }
      assert.ok(child > 0, 'the shim started a child process');
      const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => shim.once('exit', (code, signal) => resolve([code, signal])));
      shim.kill('SIGTERM');
      assert.deepEqual(await exited, [null, 'SIGTERM']);
      const status = existsSync(`/proc/${child}/status`) ? readFileSync(`/proc/${child}/status`, 'utf8') : 'gone';
      assert.ok(status === 'gone' || /State:\s+Z/.test(status), `the child is gone: ${status.slice(0, 200)} ${existsSync(`/proc/${child}/cmdline`) ? readFileSync(`/proc/${child}/cmdline`, 'utf8') : ''}`);
    } finally {
      if (shim.exitCode === null && shim.signalCode === null) shim.kill('SIGKILL');
      if (child > 0 && existsSync(`/proc/${child}`)) {
        try {
          process.kill(child, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
});

