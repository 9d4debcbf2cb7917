import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ShuffleError, isShuffleError } from '@weft/shuffle-api';
import { thrownBy } from '@weft/shuffle-api/testing';
import { createJobToken, verifyJobToken } from '../src/protocol/job-token.js';
import { attemptPath, commitPath, fetchPath, jobPartitionsPath, jobPath, leasePath, parseRoute, partitionPath, pushPath } from '../src/protocol/routes.js';
import { WireError, fromWireResponse, toWireResponse, wireError } from '../src/protocol/wire-errors.js';

const docs = readFileSync(fileURLToPath(new URL('../docs/http-api.md', import.meta.url)), 'utf8');

describe('shuffle server protocol', () => {
  it('gives every wire error its own number and documents each in docs/http-api.md with its status, code and retryability', () => {
    const kinds = Object.values(WireError);
    assert.equal(new Set(kinds.map((k) => k.wire)).size, kinds.length, 'wire numbers are never shared');
    for (const kind of kinds) {
      const rows = docs.match(new RegExp(`^\\| ${kind.wire} \\|.*$`, 'gm')) ?? [];
      assert.equal(rows.length, 1, `wire ${kind.wire} has exactly one row in docs/http-api.md`);
      // the retryable column says what the code says: "yes" or "no", optionally followed by a note in parentheses
      const retryable = kind.retryable ? 'yes' : 'no';
      const row = new RegExp(`^\\| ${kind.wire} \\| ${kind.httpStatus} \\| \`${kind.code}\` \\| ${retryable}( \\([^)|]*\\))? \\|`);
      assert.match(rows[0]!, row, `docs/http-api.md's row for wire ${kind.wire} does not say what the code does (${kind.httpStatus} ${kind.code}, retryable ${retryable}): ${rows[0]}`);
    }
  });

  it('maps every wire error to a response and back to the same code and retryability', () => {
    for (const kind of Object.values(WireError)) {
      const { status, body } = toWireResponse(wireError(kind, 'why'));
      assert.equal(status, kind.httpStatus);
      const error = fromWireResponse(status, JSON.parse(JSON.stringify(body)), { partitionId: 'p#0' });
      assert.deepEqual([error.code, error.retryable, error.context['wire'], error.partitionId], [kind.code, kind.retryable, kind.wire, 'p#0']);
    }
  });

  it('answers an unexpected failure 500 with a fixed message that leaks nothing', () => {
    const { status, body } = toWireResponse(new Error('ENOENT /secret/path/of/the/server'));
    assert.deepEqual([status, body.code, body.wire, body.message], [500, 'SHF_ERR_STORAGE_UNAVAILABLE', 14, 'internal server error']);
    const plain = toWireResponse(new ShuffleError('SHF_ERR_PARTITION_NOT_FOUND', 'partition p#0 not found'));
    assert.deepEqual([plain.status, plain.body.wire], [404, 4]);
  });

  it('tells a valid job token from a forged one (401) and from another job\'s (403)', () => {
    const secret = Buffer.from('s'.repeat(32));
    const token = createJobToken(secret, 'job-a');
    assert.equal(verifyJobToken(secret, token, 'job-a'), 'ok');
    assert.equal(verifyJobToken(secret, createJobToken(secret, 'job-b'), 'job-a'), 'forbidden');
    assert.equal(verifyJobToken(Buffer.from('t'.repeat(32)), token, 'job-a'), 'unauthorized', 'another secret');
    const [v, job, mac] = token.split('.') as [string, string, string];
    assert.equal(verifyJobToken(secret, `${v}.${Buffer.from('job-b').toString('base64url')}.${mac}`, 'job-b'), 'unauthorized', 'the job swapped under the MAC');
    assert.equal(verifyJobToken(secret, `${v}.${job}.${mac.slice(0, -2)}`, 'job-a'), 'unauthorized', 'a truncated MAC');
    for (const bad of [undefined, '', 'v2.x.y', 'v1.a.b.c', `v1.${job}`, 'x'.repeat(10_000), `v1.${job}.${mac}!`]) {
      assert.equal(verifyJobToken(secret, bad, 'job-a'), 'unauthorized', String(bad).slice(0, 20));
    }
  });

  it('parses every path the client builds back into its route, ids percent-decoded', () => {
    const job = 'job with#odd@chars%';
    const p = 'edge->x#3';
    assert.deepEqual(parseRoute('PUT', pushPath(job, p, 7)), { kind: 'push', jobId: job, partitionId: p, attempt: 7 });
    assert.deepEqual(parseRoute('POST', commitPath(job, p, 7)), { kind: 'commit', jobId: job, partitionId: p, attempt: 7 });
    assert.deepEqual(parseRoute('POST', leasePath(job, p, 7, 500)), { kind: 'lease', jobId: job, partitionId: p, attempt: 7, ttlMs: 500 });
    assert.deepEqual(parseRoute('DELETE', attemptPath(job, p, 7)), { kind: 'abort', jobId: job, partitionId: p, attempt: 7 });
    assert.deepEqual(parseRoute('GET', fetchPath(job, p, 2, 5)), { kind: 'fetch', jobId: job, partitionId: p, start: 2, end: 5 });
    assert.deepEqual(parseRoute('DELETE', partitionPath(job, p)), { kind: 'release', jobId: job, partitionId: p, epoch: undefined });
    assert.deepEqual(parseRoute('DELETE', partitionPath(job, p, 7)), { kind: 'release', jobId: job, partitionId: p, epoch: 7 });
    assert.deepEqual(parseRoute('GET', jobPartitionsPath(job)), { kind: 'list', jobId: job });
    assert.deepEqual(parseRoute('DELETE', jobPath(job, true)), { kind: 'release-job', jobId: job, keepPersistent: true, epoch: undefined });
    assert.deepEqual(parseRoute('DELETE', jobPath(job, true, 3)), { kind: 'release-job', jobId: job, keepPersistent: true, epoch: 3 });
    assert.deepEqual(parseRoute('GET', '/healthz'), { kind: 'healthz' });
    const refused = thrownBy(() => parseRoute('PUT', pushPath('..', p, 0)));
    assert.ok(isShuffleError(refused, 'SHF_ERR_INVALID_ARGUMENT') && refused.message.includes('jobId'));
  });
});
