// `#/cluster`: the task executors and shuffle servers registered in the cluster Redis, with slots, load and
// free disk; "not in cluster mode" when the UI has no cluster Redis (`available: false`). Refreshed every 5 s.
import type { ClusterResponse } from '../../src/api/ui-api.js';
import { h } from './dom.js';
import { formatBytes } from './format.js';
import type { Disposer, PageContext } from './page-context.js';

const REFRESH_MS = 5000;

export function renderCluster(cluster: ClusterResponse): HTMLElement {
  if (!cluster.available) {
    return h('div', {}, h('h1', {}, 'Cluster'),
      h('div', { class: 'message', 'data-cluster-unavailable': '' },
        h('h1', {}, 'Not in cluster mode'),
        h('p', {}, 'This UI has no cluster Redis: jobs run on local worker processes. Start the UI with --cluster redis://… to see task executors and shuffle servers.')));
  }
  return h('div', {},
    h('h1', {}, 'Cluster'),
    h('h2', {}, `Task executors (${cluster.executors.length})`),
    h('table', { 'data-executors': String(cluster.executors.length) },
      h('thead', {}, h('tr', {}, ...['id', 'address', 'state', 'slots', 'free slots', 'load', 'version'].map((c) => h('th', {}, c)))),
      h('tbody', {}, ...cluster.executors.map((e) =>
        h('tr', { 'data-executor': e.id },
          h('td', {}, e.id), h('td', {}, e.address), h('td', {}, e.state), h('td', { class: 'num' }, e.slots),
          h('td', { class: 'num' }, e.freeSlots), h('td', { class: 'num' }, e.load.toFixed(2)), h('td', {}, e.version))))),
    h('h2', {}, `Shuffle servers (${cluster.shuffleServers.length})`),
    h('table', { 'data-shuffle-servers': String(cluster.shuffleServers.length) },
      h('thead', {}, h('tr', {}, ...['id', 'url', 'state', 'free disk'].map((c) => h('th', {}, c)))),
      h('tbody', {}, ...cluster.shuffleServers.map((server) =>
        h('tr', { 'data-shuffle-server': server.id },
          h('td', {}, server.id), h('td', {}, server.url), h('td', {}, server.state),
          h('td', { class: 'num' }, server.freeDiskBytes === undefined ? '–' : formatBytes(server.freeDiskBytes)))))));
}

export function mountClusterPage(ctx: PageContext): Disposer {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let disposed = false;
  const load = async (): Promise<void> => {
    const result = await ctx.client.get<ClusterResponse>('/api/cluster');
    if (disposed || !ctx.current()) return;
    if (!result.ok) {
      ctx.fail(result.failure);
      return;
    }
    ctx.show(renderCluster(result.value), 'cluster');
    if (result.value.available) timer = setTimeout(() => void load(), REFRESH_MS);
  };
  void load();
  return () => {
    disposed = true;
    if (timer !== undefined) clearTimeout(timer);
  };
}
