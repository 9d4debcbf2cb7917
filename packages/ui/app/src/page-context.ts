// What a page is handed: the API client, a place to draw, and the two ways it ends a render — show a page, or
// show why it cannot (a failure page). A mounted page returns its disposer (closes streams and timers).
import type { ApiClient, ApiFailure } from './api-client.js';

export type PageName = 'jobs' | 'job' | 'cluster' | 'not-found' | 'version-error' | 'error';

export interface PageContext {
  readonly client: ApiClient;
  /** The drawing width available, in CSS pixels. */
  widthPx(): number;
  /** Replaces the page content, sets `data-page` and the rendered mark (`html[data-rendered]`, `weft:rendered`). */
  show(content: Node, page: PageName): void;
  /** Shows the page for a failed API call: 404, another format version, any other error. */
  fail(failure: ApiFailure): void;
  /** Whether this page is still the one on screen (a stale answer must not draw). */
  current(): boolean;
}

export type Disposer = () => void;
