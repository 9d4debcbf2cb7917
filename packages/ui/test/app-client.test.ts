import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkApiVersion, tokenFromSearch } from '../app/src/api-client.js';
import { jobHref, parseRoute } from '../app/src/router.js';
import { UI_API_VERSION } from '../src/index.js';

describe('the app’s API client and router', () => {
  it('accepts its own version and names any other one in the message', () => {
    assert.equal(checkApiVersion({ version: UI_API_VERSION, jobs: [] }), undefined);
    const failure = checkApiVersion({ version: UI_API_VERSION + 1 });
    assert.equal(failure?.kind, 'version');
    assert.match(failure?.message ?? '', new RegExp(`^log/UI format version ${UI_API_VERSION + 1} not supported: this UI reads version ${UI_API_VERSION}`));
    assert.match(checkApiVersion('not json')?.message ?? '', /version unknown not supported/);
  });

  it('reads the token from the page URL', () => {
    assert.equal(tokenFromSearch('?token=abc%2F1&x=2'), 'abc/1');
    assert.equal(tokenFromSearch(''), undefined);
    assert.equal(tokenFromSearch('?token='), undefined);
  });

  it('routes #/jobs, #/jobs/<id> (encoded), #/cluster and everything else to 404', () => {
    assert.deepEqual(parseRoute(''), { page: 'jobs' });
    assert.deepEqual(parseRoute('#/jobs/'), { page: 'jobs' });
    assert.deepEqual(parseRoute(jobHref('a b/c#1')), { page: 'job', jobId: 'a b/c#1' });
    assert.deepEqual(parseRoute('#/cluster'), { page: 'cluster' });
    assert.deepEqual(parseRoute('#/jobs/x/y'), { page: 'not-found', path: '/jobs/x/y' });
    assert.deepEqual(parseRoute('#/jobs/%E0%A4%A'), { page: 'not-found', path: '/jobs/%E0%A4%A' });
  });
});
