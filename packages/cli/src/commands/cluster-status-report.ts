import type { JobRunRecord } from '@weft/engine';
import type { ExecutorRecord } from '@weft/cluster';
import type { LiveServer } from '@weft/shuffle-remote/client';

/** One shuffle server as `weft cluster status --json` prints it. */
export interface ClusterStatusServer {
  readonly id: string;
  readonly url: string;
  /** live: takes partitions; draining: shutting down; suspect: a client reported it unreachable lately. */
  readonly state: 'live' | 'draining' | 'suspect';
  readonly diskFreeBytes: number;
  readonly diskUsedBytes: number;
  readonly activeStreams: number;
  readonly maxConcurrentStreams: number;
  readonly partitions: number;
  readonly tiered: boolean;
  readonly hostname: string | null;
  /** Until its registry record expires, as Redis said. */
  readonly expiresInMs: number;
}

/** One job as `weft cluster status --json` prints it. */
export interface ClusterStatusJob {
  readonly jobId: string;
  readonly job: string | null;
  readonly status: JobRunRecord['status'];
  readonly tasksFinished: number;
  readonly tasksTotal: number | null;
  readonly epoch: number;
  readonly owner: string | null;
  readonly startedAt: string;
  readonly lastEventAt: string;
  readonly problem?: string;
}

/** The whole answer of `weft cluster status --json`. */
export interface ClusterStatus {
  /** The executor registry's Redis, password redacted. */
  readonly cluster: string;
  readonly shuffleServersRedis: string;
  readonly eventLog: string;
  readonly executors: readonly ExecutorRecord[];
  readonly shuffleServers: readonly ClusterStatusServer[];
  readonly jobs: readonly ClusterStatusJob[];
  /** Slots of every executor, and those no job holds. */
  readonly slots: number;
  readonly freeSlots: number;
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const iso = (ms: number): string => new Date(ms).toISOString();

export function toClusterStatusServer(server: LiveServer): ClusterStatusServer {
  return {
    id: server.serverId,
    url: server.url,
    state: server.suspect === true ? 'suspect' : server.draining === true ? 'draining' : 'live',
    diskFreeBytes: server.capacityBytes,
    diskUsedBytes: server.diskUsedBytes,
    activeStreams: server.activeStreams,
    maxConcurrentStreams: server.maxConcurrentStreams,
    partitions: server.partitions,
    tiered: server.tiered,
    hostname: server.hostname ?? null,
    expiresInMs: server.expiresInMs,
  };
}

export function toClusterStatusJob(run: JobRunRecord): ClusterStatusJob {
  return {
    jobId: run.jobId,
    job: run.jobName ?? null,
    status: run.status,
    tasksFinished: run.tasksFinished,
    tasksTotal: run.tasksTotal ?? null,
    epoch: run.epoch,
    owner: run.owner ?? null,
    startedAt: iso(run.firstAtMs),
    lastEventAt: iso(run.lastAtMs),
    ...(run.problem === undefined ? {} : { problem: run.problem }),
  };
}

/** Executors by id; servers by id; jobs unfinished first, then the most recently active first. */
export function sortClusterStatus(status: ClusterStatus): ClusterStatus {
  const unfinished = (j: ClusterStatusJob): number => (j.status === 'unfinished' ? 0 : 1);
  return {
    ...status,
    executors: [...status.executors].sort((a, b) => byString(a.id, b.id)),
    shuffleServers: [...status.shuffleServers].sort((a, b) => byString(a.id, b.id)),
    jobs: [...status.jobs].sort((a, b) => unfinished(a) - unfinished(b) || byString(b.lastEventAt, a.lastEventAt) || byString(a.jobId, b.jobId)),
  };
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((row) => (row[i] ?? '').length)));
  return [header, ...rows].map((row) => row.map((cell, i) => (cell ?? '').padEnd(widths[i] as number)).join('  ').trimEnd());
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** Three short tables for a person: executors, shuffle servers, jobs. */
export function formatClusterStatus(status: ClusterStatus): string {
  const lines = [`cluster ${status.cluster}: ${plural(status.executors.length, 'task executor')}, ${status.freeSlots} of ${status.slots} slots free`];
  if (status.executors.length > 0) {
    lines.push(
      ...table(
        ['EXECUTOR', 'URL', 'HOST', 'SLOTS FREE', 'VERSION', 'STATE'],
        status.executors.map((e) => [e.id, e.advertisedUrl, e.host, `${e.freeSlots}/${e.slots}`, e.version, e.draining ? 'draining' : 'live']),
      ).map((l) => `  ${l}`),
    );
  }
  lines.push('', `shuffle servers in ${status.shuffleServersRedis}: ${status.shuffleServers.length}`);
  if (status.shuffleServers.length > 0) {
    lines.push(
      ...table(
        ['SERVER', 'URL', 'STATE', 'DISK FREE', 'DISK USED', 'STREAMS', 'PARTITIONS'],
        status.shuffleServers.map((s) => [s.id, s.url, s.state, bytes(s.diskFreeBytes), bytes(s.diskUsedBytes), `${s.activeStreams}/${s.maxConcurrentStreams}`, String(s.partitions)]),
      ).map((l) => `  ${l}`),
    );
  }
  const unfinished = status.jobs.filter((j) => j.status === 'unfinished').length;
  lines.push('', `jobs in ${status.eventLog}: ${status.jobs.length} (${unfinished} unfinished)`);
  if (status.jobs.length > 0) {
    lines.push(
      ...table(
        ['JOB ID', 'JOB', 'STATUS', 'TASKS', 'EPOCH', 'OWNER', 'LAST EVENT'],
        status.jobs.map((j) => [j.jobId, j.job ?? '-', j.status, `${j.tasksFinished}/${j.tasksTotal ?? '?'}`, String(j.epoch), j.owner ?? '-', j.lastEventAt]),
      ).map((l) => `  ${l}`),
    );
  }
  return `${lines.join('\n')}\n`;
}
