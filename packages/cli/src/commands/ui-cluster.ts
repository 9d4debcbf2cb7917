import type { UiClusterSnapshot } from '@weft/ui';
import { usageError } from '../parse-command-args.js';
import { settingProblem } from './run-settings.js';

/** Something `weft ui` opens and closes when it exits. */
export interface Closeable {
  close(): Promise<void>;
}

/**
 * `weft ui --cluster URL [--shuffle-servers URL]`: a lister of the cluster's task executors and shuffle
 * servers, read from their Redis registries on each request (as `weft cluster status` does), and what to
 * close. Usage errors name the flag of a registry that cannot be opened.
 */
export async function openUiCluster(request: { cluster: { value: string; source: string }; servers: { value: string; source: string } }): Promise<{ list: () => Promise<UiClusterSnapshot>; opened: Closeable[] }> {
  const [{ RedisExecutorRegistry }, { RedisServerRegistry }] = await Promise.all([import('@weft/cluster'), import('@weft/shuffle-remote/client')]);
  const opened: Closeable[] = [];
  const open = async <T extends Closeable>(source: string, create: () => T, start: (t: T) => Promise<void>): Promise<T> => {
    try {
      const resource = create();
      opened.push(resource);
      await start(resource);
      return resource;
    } catch (error) {
      await Promise.allSettled(opened.map((r) => r.close()));
      throw usageError('ui', settingProblem(source, error), error);
    }
  };
  const executors = await open(request.cluster.source, () => new RedisExecutorRegistry({ url: request.cluster.value, setting: request.cluster.source }), (r) => r.start());
  const servers = await open(request.servers.source, () => new RedisServerRegistry({ url: request.servers.value, setting: request.servers.source }), (r) => r.start());
  return {
    opened,
    list: async () => {
      const [live, pool] = await Promise.all([executors.listLive(), servers.listLive()]);
      return {
        executors: live.map((e) => ({ id: e.id, address: e.advertisedUrl, slots: e.slots, freeSlots: e.freeSlots, load: e.slots === 0 ? 0 : (e.slots - e.freeSlots) / e.slots, version: e.version, state: e.draining ? 'draining' : 'live' })),
        shuffleServers: pool.map((s) => ({ id: s.serverId, url: s.url, freeDiskBytes: s.capacityBytes, state: s.suspect === true ? 'suspect' : s.draining === true ? 'draining' : 'live' })),
      };
    },
  };
}
