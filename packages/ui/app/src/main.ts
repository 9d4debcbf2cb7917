// The Weft UI's single-page app: hash routes (router.ts) to the jobs list, a job's page and the cluster page, all
// drawn with plain DOM and SVG from the UI server's JSON (src/api/ui-api.ts). A `?token=…` in the page URL goes
// with every API call. When a page has drawn, `html[data-rendered]` names it and `performance.mark('weft:rendered')`
// is set (what the browser tests and the render benchmark wait for).
import { ApiClient, type ApiFailure, tokenFromSearch } from './api-client.js';
import { mountClusterPage } from './cluster-page.js';
import { h } from './dom.js';
import { mountJobPage } from './job-page.js';
import { mountJobsPage } from './jobs-page.js';
import { renderFailure, renderNotFound } from './message-page.js';
import type { Disposer, PageContext, PageName } from './page-context.js';
import { parseRoute, type Route } from './router.js';
import { installStyles } from './styles.js';

export const RENDERED_MARK = 'weft:rendered';

function start(): void {
  installStyles(document);
  const client = new ApiClient(tokenFromSearch(location.search));
  const navLinks = { jobs: h('a', { href: '#/jobs' }, 'Jobs'), cluster: h('a', { href: '#/cluster' }, 'Cluster') };
  const content = h('main', {});
  const root = document.getElementById('weft-app') ?? document.body.appendChild(h('div', { id: 'weft-app' }));
  root.replaceChildren(h('header', { class: 'top' }, h('span', { class: 'brand' }, 'WEFT'), navLinks.jobs, navLinks.cluster), content);

  let generation = 0;
  let dispose: Disposer | undefined;

  const navigate = (): void => {
    dispose?.();
    dispose = undefined;
    const mine = ++generation;
    document.documentElement.removeAttribute('data-rendered');
    performance.clearMarks(RENDERED_MARK);
    const route: Route = parseRoute(location.hash);
    navLinks.jobs.classList.toggle('active', route.page === 'jobs' || route.page === 'job');
    navLinks.cluster.classList.toggle('active', route.page === 'cluster');
    const ctx: PageContext = {
      client,
      // main's padding (2 × 20) and a panel's padding and border (2 × 13).
      widthPx: () => Math.max(600, content.clientWidth - 40 - 26),
      current: () => mine === generation,
      show: (node: Node, page: PageName) => {
        if (mine !== generation) return;
        content.replaceChildren(node);
        content.setAttribute('data-page', page);
        if (document.documentElement.getAttribute('data-rendered') !== page) {
          document.documentElement.setAttribute('data-rendered', page);
          performance.mark(RENDERED_MARK, { detail: page });
        }
      },
      fail: (failure: ApiFailure) => {
        const { content: node, page } = renderFailure(failure);
        ctx.show(node, page);
      },
    };
    content.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
    content.removeAttribute('data-page');
    switch (route.page) {
      case 'jobs':
        dispose = mountJobsPage(ctx);
        break;
      case 'job':
        dispose = mountJobPage(ctx, route.jobId);
        break;
      case 'cluster':
        dispose = mountClusterPage(ctx);
        break;
      case 'not-found':
        ctx.show(renderNotFound(`No page at #${route.path}.`), 'not-found');
        break;
    }
  };
  window.addEventListener('hashchange', navigate);
  navigate();
}

start();
