// The pages that say why there is nothing to draw: 404 (an unknown job id or route), a response in another
// format version, or any other API failure.
import type { ApiFailure } from './api-client.js';
import { h } from './dom.js';
import type { PageName } from './page-context.js';

export function renderFailure(failure: ApiFailure): { content: HTMLElement; page: PageName } {
  switch (failure.kind) {
    case 'not-found':
      return { page: 'not-found', content: renderNotFound(failure.message, failure.code) };
    case 'version':
      return {
        page: 'version-error',
        content: h('div', { class: 'message', 'data-version-error': String(failure.version) },
          h('h1', {}, 'Unsupported format version'), h('p', { class: 'error-text' }, failure.message)),
      };
    case 'http':
      return {
        page: 'error',
        content: h('div', { class: 'message' },
          h('h1', {}, failure.status === 401 || failure.status === 403 ? 'Not allowed' : `The UI server answered ${failure.status}`),
          h('p', { class: 'error-text' }, failure.code ? `${failure.code}: ${failure.message}` : failure.message),
          failure.status === 401 || failure.status === 403 ? h('p', { class: 'muted' }, 'Open the URL weft printed, with its ?token=…') : null),
      };
    case 'network':
      return { page: 'error', content: h('div', { class: 'message' }, h('h1', {}, 'The UI server cannot be reached'), h('p', { class: 'error-text' }, failure.message)) };
  }
}

export function renderNotFound(message: string, code?: string): HTMLElement {
  return h('div', { class: 'message', 'data-not-found': code ?? '' },
    h('h1', {}, '404 — not found'),
    h('p', { class: 'error-text' }, message),
    h('p', {}, h('a', { href: '#/jobs' }, 'All jobs')));
}
