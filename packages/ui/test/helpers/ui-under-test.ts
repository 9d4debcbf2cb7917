// The UI the end-to-end browser test looks at. Today: the static fixture server over the canned job (a running
// word count with one failover), guarded by a token. Once the real server is merged, only this function changes:
// start `weft run … --ui` (with --inject-faults for the failover) and fill in the same fields from that run.
import { randomBytes } from 'node:crypto';
import type { LayoutEdge } from '../../app/src/dag-layout.js';
import { CANNED_FAILOVER_CAUSE, CANNED_FINISHED_JOB_ID, CANNED_JOB_ID, cannedCluster, cannedFinishedJobDetail, cannedJobDetail, cannedJobList } from './canned-job.js';
import { startStaticUiServer } from './static-ui-server.js';

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

export async function startUiUnderTest(): Promise<UiUnderTest> {
  const token = randomBytes(12).toString('hex');
  const detail = cannedJobDetail();
  const server = await startStaticUiServer({
    jobs: cannedJobList(),
    details: new Map<string, unknown>([[CANNED_JOB_ID, detail], [CANNED_FINISHED_JOB_ID, cannedFinishedJobDetail()]]),
    cluster: cannedCluster(false),
    token,
  });
  let step = 0;
  return {
    origin: server.url,
    token,
    pageUrl: (hash) => `${server.url}/?token=${token}${hash}`,
    jobId: CANNED_JOB_ID,
    finishedJobId: CANNED_FINISHED_JOB_ID,
    unknownJobId: 'no-such-job-0',
    expected: {
      vertices: detail.vertices.map((v) => v.id),
      edges: detail.edges.map((e) => ({ source: e.source, target: e.target })),
      spanningRegions: [['read', 'tokenize']],
      failoverCause: CANNED_FAILOVER_CAUSE,
    },
    async advance() {
      await server.waitForStreams(CANNED_JOB_ID);
      step++;
      server.publish(CANNED_JOB_ID, cannedJobDetail({ elapsedMs: 1500 + step * 1000, recordsRead: 1200 + step * 25_000, tasksFinished: 4 + Math.min(step, 2) }));
    },
    apiRequests: () => server.requests.filter((r) => r.path.startsWith('/api/')),
    close: () => server.close(),
    [Symbol.asyncDispose]: () => server.close(),
  };
}
