// The UI the end-to-end browser test looks at: `weft ui --meta <the runs' SQLite log> --token T` over real runs —
// a `weft run examples/word-count.ts --inject-faults throw:…` long enough that it still runs while the pages
// are checked (a billion lines: killed at close, long before its end), with one failover early, and a quick run of the same job before it, the
// finished job. (`weft ui` rather than the run's own `--ui`: that server ends with its job, and a job that is
// sure to outlive the test would have to be longer still; packages/cli/test/weft-ui.test.ts covers `--ui`.) A
// small recording proxy in front of the server tells the test which API requests the page made and with what
// Authorization header.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTempDir } from '@weft/testkit';
import type { JobDetailResponse } from '../../src/index.js';
import type { LayoutEdge } from '../../app/src/dag-layout.js';

const bin = fileURLToPath(new URL('../../../cli/bin/weft.js', import.meta.url));
const wordCount = fileURLToPath(new URL('../../../../examples/word-count.ts', import.meta.url));

export interface UiUnderTest extends AsyncDisposable {
  /** The page URL (token included) for a hash route such as `#/jobs`. */
  pageUrl(hash: string): string;
  /** The origin, to tell API requests apart. */
  readonly origin: string;
  readonly token: string;
  /** A running job with at least one failover. */
  readonly jobId: string;
  /** A job that ended (succeeded) before the test looked. */
  readonly finishedJobId: string;
  /** An id the log does not hold. */
  readonly unknownJobId: string;
  readonly expected: {
    readonly vertices: readonly string[];
    readonly edges: readonly LayoutEdge[];
    /** The vertex sets (sorted) of pipelined regions that span more than one vertex. */
    readonly spanningRegions: readonly (readonly string[])[];
    /** Text the failover's cause contains. */
    readonly failoverCause: string;
  };
  /** Makes the job's live counters move (the fixture publishes a later snapshot; a real run just runs on). */
  advance(): Promise<void>;
  /** The API requests the UI received: path and Authorization header (empty when the server cannot tell). */
  apiRequests(): readonly { readonly path: string; readonly authorization: string | undefined }[];
  close(): Promise<void>;
}

function weft(args: readonly string[], cwd: string): ChildProcess {
  return spawn(process.execPath, [bin, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

async function getJson(url: string, token: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
}

export async function startUiUnderTest(): Promise<UiUnderTest> {
  const token = randomBytes(12).toString('hex');
  const dir = await createTempDir('weft-ui-under-test-');
  const common = ['--parallelism', '2', '--workers', '2'];
  const finishedJobId = 'word-count-finished';
  const jobId = 'word-count-running';
  const quick = weft(['run', wordCount, ...common, '--job-id', finishedJobId, '--', '--lines', '20000', '--output', join(dir.path, 'quick.tsv')], dir.path);
  let quickErr = '';
  quick.stderr?.setEncoding('utf8').on('data', (t: string) => (quickErr += t));
  if ((await exited(quick)) !== 0) throw new Error(`the finished job's run failed: ${quickErr}`);

  const run = weft(['run', wordCount, ...common, '--job-id', jobId, '--inject-faults', 'throw:generate-lines#1@50000', '--', '--lines', '1000000000', '--output', join(dir.path, 'out.tsv')], dir.path);
  let err = '';
  run.stderr?.setEncoding('utf8').on('data', (t: string) => (err += t));
  const ui = weft(['ui', '--meta', `sqlite://${join(dir.path, '.weft', 'shuffle-meta.db')}`, '--port', '0', '--token', token], dir.path);
  let uiOut = '';
  const target = await new Promise<string>((resolve, reject) => {
    ui.stdout?.setEncoding('utf8').on('data', (t: string) => {
      uiOut += t;
      const m = /^ui on (http:\/\/\S+)$/m.exec(uiOut);
      if (m !== null) resolve(m[1] as string);
    });
    ui.once('exit', () => reject(new Error(`weft ui exited before serving: ${uiOut}`)));
  });
  // the job with its failover logged, while it still runs
  let detail: JobDetailResponse | undefined;
  for (;;) {
    if (run.exitCode !== null) throw new Error(`the running job ended before its failover showed: ${err}`);
    const answer = await getJson(`${target}/api/jobs/${jobId}`, token);
    if (answer.status === 200) {
      detail = answer.body as JobDetailResponse;
      if (detail.failovers.length > 0 && detail.progress !== undefined) break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  const requests: { path: string; authorization: string | undefined }[] = [];
  const proxy = createServer((req, res) => {
    requests.push({ path: req.url ?? '/', authorization: req.headers.authorization });
    const forward = request(`${target}${req.url ?? '/'}`, { method: req.method, headers: req.headers, agent: false }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    res.on('close', () => forward.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

  const spanning = new Set<string>();
  for (const region of detail.regions) if (region.vertices.length > 1) spanning.add([...region.vertices].sort().join(','));
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      for (const child of [run, ui]) {
        if (child.exitCode !== null) continue;
        child.kill('SIGKILL');
        await exited(child);
      }
      await dir.remove();
    })());
  return {
    origin,
    token,
    pageUrl: (hash) => `${origin}/?token=${token}${hash}`,
    jobId,
    finishedJobId,
    unknownJobId: 'no-such-job-0',
    expected: {
      vertices: detail.vertices.map((v) => v.id),
      edges: detail.edges.map((e) => ({ source: e.source, target: e.target })),
      spanningRegions: [...spanning].map((key) => key.split(',')),
      failoverCause: 'WEFT_ERR_INJECTED_FAULT',
    },
    // the job runs on: its counters move by themselves (published every second)
    advance: async () => {},
    apiRequests: () => requests.filter((r) => r.path.startsWith('/api/')),
    close,
    [Symbol.asyncDispose]: close,
  };
}
