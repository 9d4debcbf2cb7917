// Hash routes: `#/jobs` (also the empty hash), `#/jobs/<id>` (the id URI-encoded), `#/cluster`; anything else is
// a 404 page.

export type Route =
  | { readonly page: 'jobs' }
  | { readonly page: 'job'; readonly jobId: string }
  | { readonly page: 'cluster' }
  | { readonly page: 'not-found'; readonly path: string };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '').replace(/\/+$/, '');
  if (path === '' || path === '/jobs') return { page: 'jobs' };
  if (path === '/cluster') return { page: 'cluster' };
  const job = /^\/jobs\/([^/]+)$/.exec(path);
  if (job) {
    try {
      return { page: 'job', jobId: decodeURIComponent(job[1] as string) };
    } catch {
      return { page: 'not-found', path };
    }
  }
  return { page: 'not-found', path };
}

export function jobHref(jobId: string): string {
  return `#/jobs/${encodeURIComponent(jobId)}`;
}
