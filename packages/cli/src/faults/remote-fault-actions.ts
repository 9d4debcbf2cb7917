import { createBlobStore, createMetadataStore, type RemoteShuffleServiceFactory } from '@weft/shuffle-remote';
import { readFileSync } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { EngineError } from '@weft/engine';
import { type ServerRecord, ShuffleServerFaults } from '@weft/shuffle-remote/client';
import type { DamagePartitionRequest, FaultActions, ShuffleServerFaultActions } from './fault-harness.js';

/**
 * Damages committed partitions of the persisted blocking shuffle through its public stores: the
 * metadata store names the committed attempt's data object, which is deleted, or rewritten with one byte
 * flipped (read whole, deleted, written again — the blob store has no in-place writes). The byte is drawn
 * from the data blocks (`[0, indexOffset)`), so a consumer's per-block CRC32C catches it; an object with
 * no data gets a byte of its index flipped instead.
 */
export function remotePartitionDamage(factory: RemoteShuffleServiceFactory): Required<Pick<FaultActions, 'damagePartition'>> {
  return {
    async damagePartition(request: DamagePartitionRequest): Promise<string> {
      const blob = createBlobStore(factory.options.store);
      const meta = createMetadataStore(factory.options);
      try {
        await Promise.all([blob.start(), meta.start()]);
        const { commit } = await meta.lookupPartition(request.jobId, request.partitionId);
        if (commit === undefined) return `partition ${request.partitionId} was not committed: nothing damaged`;
        if (request.mode === 'delete') {
          await blob.delete(commit.objectKey);
          return `deleted the data object ${commit.objectKey} of partition ${request.partitionId}`;
        }
        const reader = await blob.openReader(commit.objectKey);
        let bytes: Uint8Array;
        try {
          bytes = await reader.read(0, commit.objectBytes);
        } finally {
          await reader.close();
        }
        const [from, to] = commit.indexOffset > 0 ? [0, commit.indexOffset] : [commit.indexOffset, commit.indexOffset + commit.indexLength];
        const offset = request.random.int(from, Math.max(from + 1, to));
        bytes[offset] = (bytes[offset] as number) ^ 0xff;
        await blob.delete(commit.objectKey);
        const writer = await blob.createWriter(commit.objectKey);
        try {
          await writer.append([bytes]);
          await writer.complete();
        } catch (error) {
          await writer.abort();
          throw error;
        }
        return `flipped byte ${offset} of ${commit.objectBytes} in the data object ${commit.objectKey} of partition ${request.partitionId}`;
      } finally {
        await Promise.allSettled([blob.close(), meta.close()]);
      }
    },
  };
}

/** Where the servers of a `weft shuffle-server` pool are registered (the ShuffleServerServiceFactory's options). */
export interface ShuffleServerPoolRef {
  readonly redis: string;
  readonly redisKeyPrefix?: string;
}

/**
 * Damage and server faults on a shuffle-server pool, done on this machine: the registry record of the
 * server holding a partition gives its pid, hostname and `--dir`; a server on another host is refused
 * (WEFT_ERR_INVALID_ARGUMENT). delete-partition unlinks the committed object in the server's directory
 * (its fetches then answer SHF_ERR_PARTITION_NOT_FOUND); corrupt-partition flips one byte of it in place
 * (a data byte, so the reader's CRC32C catches it). Push, commit and fetch faults are armed in Redis
 * for the server to fire (it must run with WEFT_SERVER_FAULT_HOOKS=1).
 */
export function shuffleServerFaultActions(pool: ShuffleServerPoolRef): Required<Pick<FaultActions, 'damagePartition' | 'shuffleServers'>> {
  let opened: Promise<ShuffleServerFaults> | undefined;
  const faults = (): Promise<ShuffleServerFaults> => (opened ??= ShuffleServerFaults.open({ redis: pool.redis, ...(pool.redisKeyPrefix === undefined ? {} : { redisKeyPrefix: pool.redisKeyPrefix }) }));
  const local = async (serverId: string): Promise<ServerRecord & { pid: number; dir: string }> => {
    const record = await (await faults()).server(serverId);
    if (record === undefined) throw faultFailed(`shuffle server ${serverId} is not registered (gone?)`);
    if (record.pid === undefined || record.dir === undefined) throw faultFailed(`shuffle server ${serverId} does not publish its pid and directory (an older weft?)`);
    if (record.hostname !== undefined && record.hostname !== hostname()) throw faultFailed(`shuffle server ${serverId} runs on ${record.hostname}, not on this machine (${hostname()}): server faults are same-machine only`);
    return record as ServerRecord & { pid: number; dir: string };
  };
  const shuffleServers: ShuffleServerFaultActions = {
    async arm(request) {
      const server = await local(request.serverId);
      await (await faults()).arm(request);
      return { serverId: server.serverId, pid: server.pid };
    },
    async locate(serverId) {
      const server = await local(serverId);
      return { serverId, pid: server.pid };
    },
    signal(pid, signal) {
      process.kill(pid, signal);
    },
    async holder(jobId, partitionId) {
      return (await (await faults()).committed(jobId, partitionId))?.serverId;
    },
    async watch(pid, state, abort, intervalMs) {
      while (!abort.aborted) {
        const now = processState(pid);
        if (state === 'gone' ? now === 'gone' || now === 'Z' : now === 'T' || now === 't') return true;
        if (state === 'stopped' && now === 'gone') return false;
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
      }
      return false;
    },
    async close() {
      if (opened !== undefined) await (await opened.catch(() => undefined))?.close();
    },
  };
  return {
    shuffleServers,
    async damagePartition(request: DamagePartitionRequest): Promise<string> {
      const commit = await (await faults()).committed(request.jobId, request.partitionId);
      if (commit === undefined) return `partition ${request.partitionId} was not committed: nothing damaged`;
      const server = await local(commit.serverId);
      const path = join(server.dir, 'objects', ...commit.objectKey.split('/'));
      if (request.mode === 'delete') {
        await unlink(path);
        return `deleted ${path} (the data object of partition ${request.partitionId}) on shuffle server ${server.serverId}`;
      }
      const [from, to] = commit.indexOffset > 0 ? [0, commit.indexOffset] : [commit.indexOffset, commit.indexOffset + commit.indexLength];
      const offset = request.random.int(from, Math.max(from + 1, to));
      const file = await open(path, 'r+');
      try {
        const byte = Buffer.alloc(1);
        await file.read(byte, 0, 1, offset);
        byte[0] = (byte[0] as number) ^ 0xff;
        await file.write(byte, 0, 1, offset);
      } finally {
        await file.close();
      }
      return `flipped byte ${offset} of ${commit.objectBytes} in ${path} (partition ${request.partitionId}) on shuffle server ${server.serverId}`;
    },
  };
}

/** The state letter of /proc/<pid>/stat (R, S, T, Z, …), or 'gone'. Linux only. */
function processState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return 'gone';
  }
}

function faultFailed(problem: string): EngineError {
  return new EngineError('WEFT_ERR_INVALID_ARGUMENT', `invalid --inject-faults: ${problem}`, { context: { field: '--inject-faults' } });
}
