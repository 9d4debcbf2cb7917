import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { request } from 'undici';
import { isShuffleError } from '@weft/shuffle-api';
import { rejectionOf } from '@weft/shuffle-api/testing';
import { createJobToken } from '@weft/shuffle-remote/client';
import { encodeObject, fetchedRecords, testDescriptor, text } from './helpers/server-objects.js';
import { startTestServer } from './helpers/test-server.js';

const JOB = 'job-api';

function records(prefix: string, n: number): Uint8Array[] {
  return Array.from({ length: n }, (_, i) => text(`${prefix}-${i}`));
}

describe('shuffle server HTTP API', () => {
  it('pushes, commits, fetches a range of subpartitions and lists the partition with its sizes', async () => {
    await using t = await startTestServer();
    const object = await encodeObject([[records('a', 3), records('b', 5), [], records('d', 1)]]);
    const target = { url: t.server.url, token: t.token(JOB), jobId: JOB, partitionId: 'p#0', attempt: 0 };
    const pushed = await t.client.push({ ...target, body: [object.bytes], length: object.bytes.length });
    assert.equal(pushed.objectBytes, object.bytes.length);
    const committed = await t.client.commit(target, testDescriptor({ jobId: JOB, partitionId: 'p#0', attempt: 0, subpartitions: 4, token: target.token }), object.subpartitionBytes);
    assert.deepEqual([committed.attempt, committed.numberOfSubpartitions, committed.subpartitionBytes], [0, 4, object.subpartitionBytes]);
    assert.equal((committed.descriptor.details as Record<string, unknown>)['token'], undefined, 'a stored descriptor must not keep the job token');

    const fetched = await fetchedRecords(await t.client.fetch({ ...target, start: 1, end: 3 }), 1, 3);
    assert.deepEqual(fetched, [['b-0', 'b-1', 'b-2', 'b-3', 'b-4'], [], ['d-0']]);
    const listed = await t.client.list(t.server.url, target.token, JOB);
    assert.deepEqual(listed.map((p) => [p.partitionId, p.totalBytes]), [['p#0', object.subpartitionBytes.reduce((a, b) => a + b, 0)]]);
  });

  it('streams only the asked subpartition of a many-region object: its index entries and its own blocks', async () => {
    await using t = await startTestServer();
    const big = (tag: string): Uint8Array[] => Array.from({ length: 200 }, (_, i) => text(`${tag}-${i}-${'x'.repeat(200)}`));
    const object = await encodeObject([[big('r0s0'), big('r0s1'), big('r0s2')], [big('r1s0'), big('r1s1'), big('r1s2')], [big('r2s0'), [], big('r2s2')]], 'none');
    const target = { url: t.server.url, token: t.token(JOB), jobId: JOB, partitionId: 'p#1', attempt: 0 };
    await t.client.push({ ...target, body: [object.bytes], length: object.bytes.length });
    await t.client.commit(target, testDescriptor({ jobId: JOB, partitionId: 'p#1', attempt: 0, subpartitions: 3, token: target.token }), object.subpartitionBytes);
    const response = await t.client.fetch({ ...target, start: 1, end: 1 });
    assert.equal(response.location.numberOfRegions, 3);
    // entries of one subpartition (3 regions × 16 bytes) plus its two blocks: about a third of the data
    assert.ok(response.contentLength < object.bytes.length / 2, `fetched ${response.contentLength} of ${object.bytes.length} bytes`);
    const [only] = await fetchedRecords(response, 1, 1, 'p#1');
    assert.deepEqual(only, [...big('r0s1'), ...big('r1s1')].map((r) => new TextDecoder().decode(r)));
  });

  it('lets the first attempt to commit win: a later one gets 409 COMMIT_CONFLICT and its data is deleted', async () => {
    await using t = await startTestServer();
    const first = await encodeObject([[records('first', 10)]]);
    const second = await encodeObject([[records('second', 10)]]);
    const at = (attempt: number) => ({ url: t.server.url, token: t.token(JOB), jobId: JOB, partitionId: 'p#2', attempt });
    await t.client.push({ ...at(0), body: [first.bytes], length: first.bytes.length });
    await t.client.push({ ...at(1), body: [second.bytes], length: second.bytes.length });
    assert.equal((await t.objectFiles()).length, 2);
    const d = (attempt: number) => testDescriptor({ jobId: JOB, partitionId: 'p#2', attempt, subpartitions: 1, token: at(attempt).token });
    await t.client.commit(at(1), d(1), second.subpartitionBytes);
    const refused = await rejectionOf(t.client.commit(at(0), d(0), first.subpartitionBytes));
    assert.ok(isShuffleError(refused, 'SHF_ERR_COMMIT_CONFLICT'), String(refused));
    assert.equal(refused.context['httpStatus'], 409);
    assert.equal((await t.objectFiles()).length, 1, "the losing attempt's object must be deleted");
    assert.equal((await t.client.commit(at(1), d(1), second.subpartitionBytes)).attempt, 1, 'committing the winner again is idempotent');
    const pushAgain = await rejectionOf(t.client.push({ ...at(2), body: [first.bytes], length: first.bytes.length }));
    assert.ok(isShuffleError(pushAgain, 'SHF_ERR_COMMIT_CONFLICT'), 'a push for a committed partition is refused');
    const [winner] = await fetchedRecords(await t.client.fetch({ ...at(0), start: 0, end: 0 }), 0, 0, 'p#2');
    assert.deepEqual(winner, records('second', 10).map((r) => new TextDecoder().decode(r)));
    assert.equal((await t.objectFiles()).length, 1);
  });

  it('answers a missing, forged or other job\'s token with 401 / 403, an SHF code and no data', async () => {
    await using t = await startTestServer();
    const object = await encodeObject([[records('secret-payload', 3)]]);
    const target = { url: t.server.url, token: t.token(JOB), jobId: JOB, partitionId: 'p#3', attempt: 0 };
    await t.client.push({ ...target, body: [object.bytes], length: object.bytes.length });
    await t.client.commit(target, testDescriptor({ jobId: JOB, partitionId: 'p#3', attempt: 0, subpartitions: 1, token: target.token }), object.subpartitionBytes);
    const path = `/v1/jobs/${JOB}/partitions/p%233/data?start=0&end=0`;
    const forged = `v1.${Buffer.from(JOB).toString('base64url')}.${Buffer.alloc(32, 7).toString('base64url')}`;
    const cases: [string, Record<string, string>, number, string][] = [
      ['no token', {}, 401, 'SHF_ERR_UNAUTHORIZED'],
      ['a malformed token', { authorization: 'Bearer nonsense' }, 401, 'SHF_ERR_UNAUTHORIZED'],
      ['a forged token', { authorization: `Bearer ${forged}` }, 401, 'SHF_ERR_UNAUTHORIZED'],
      ['a token made with another secret', { authorization: `Bearer ${createJobToken(Buffer.from('another-secret-0123456789abcdef'), JOB)}` }, 401, 'SHF_ERR_UNAUTHORIZED'],
      ['a token with one MAC character changed', { authorization: `Bearer ${t.token(JOB).replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))}` }, 401, 'SHF_ERR_UNAUTHORIZED'],
      ["another job's token", { authorization: `Bearer ${t.token('other-job')}` }, 403, 'SHF_ERR_FORBIDDEN'],
    ];
    for (const [what, headers, status, code] of cases) {
      for (const [method, p] of [['GET', path], ['GET', `/v1/jobs/${JOB}/partitions`], ['DELETE', `/v1/jobs/${JOB}/partitions/p%233`]] as const) {
        const res = await request(`${t.server.url}${p}`, { method, headers });
        const bodyText = await res.body.text();
        assert.equal(res.statusCode, status, `${what} on ${method} ${p}`);
        const body = JSON.parse(bodyText) as Record<string, unknown>;
        assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'wire']);
        assert.equal(body['code'], code);
        assert.ok(!bodyText.includes('secret-payload') && !bodyText.includes('p#3'), `${what}: the error body leaks data: ${bodyText}`);
      }
    }
    const [still] = await fetchedRecords(await t.client.fetch({ ...target, start: 0, end: 0 }), 0, 0, 'p#3');
    assert.equal(still?.length, 3, 'refused requests must not touch the partition');
    // through the client, a token of another secret says which server refused it and what to check
    const other = await rejectionOf(t.client.list(t.server.url, createJobToken(Buffer.from('another-secret-0123456789abcdef'), JOB), JOB));
    assert.ok(isShuffleError(other, 'SHF_ERR_UNAUTHORIZED'), String(other));
    assert.equal(other.retryable, false);
    assert.ok(other.message.includes(`from ${t.server.url}`) && other.message.includes('WEFT_SHUFFLE_SECRET'), other.message);
  });

  it('serves /healthz, and /metrics in Prometheus format with bytes, streams, partitions, disk and latency histograms', async () => {
    await using t = await startTestServer();
    const object = await encodeObject([[records('m', 50)]]);
    const target = { url: t.server.url, token: t.token(JOB), jobId: JOB, partitionId: 'p#4', attempt: 0 };
    await t.client.push({ ...target, body: [object.bytes], length: object.bytes.length });
    await t.client.commit(target, testDescriptor({ jobId: JOB, partitionId: 'p#4', attempt: 0, subpartitions: 1, token: target.token }), object.subpartitionBytes);
    const response = await t.client.fetch({ ...target, start: 0, end: 0 });
    await fetchedRecords(response, 0, 0, 'p#4');
    const health = await request(`${t.server.url}/healthz`);
    assert.equal(health.statusCode, 200);
    assert.equal(((await health.body.json()) as { status: string }).status, 'ok');
    assert.equal(await t.metric('weft_shuffle_server_bytes_in_total'), object.bytes.length);
    assert.equal(await t.metric('weft_shuffle_server_bytes_out_total'), response.contentLength);
    assert.equal(await t.metric('weft_shuffle_server_active_streams'), 0);
    assert.equal(await t.metric('weft_shuffle_server_partitions'), 1);
    assert.equal(await t.metric('weft_shuffle_server_disk_used_bytes'), object.bytes.length);
    assert.equal(await t.metric('weft_shuffle_server_request_duration_seconds_count{route="push",status="201"}'), 1);
    assert.equal(await t.metric('weft_shuffle_server_request_duration_seconds_count{route="fetch",status="200"}'), 1);
    const metricsResponse = await request(`${t.server.url}/metrics`);
    assert.match(String(metricsResponse.headers['content-type']), /text\/plain/);
    assert.match(await metricsResponse.body.text(), /weft_shuffle_server_request_duration_seconds_bucket\{le="0.005",route="commit",status="200"\} \d/);
  });

  it('releases a partition idempotently, and a job keeping its BLOCKING_PERSISTENT partitions when asked', async () => {
    await using t = await startTestServer();
    const token = t.token(JOB);
    for (const [partitionId, type] of [['a#0', 'BLOCKING'], ['b#0', 'BLOCKING_PERSISTENT'], ['c#0', 'BLOCKING']] as const) {
      const object = await encodeObject([[records(partitionId, 4)]]);
      const target = { url: t.server.url, token, jobId: JOB, partitionId, attempt: 0 };
      await t.client.push({ ...target, body: [object.bytes], length: object.bytes.length });
      await t.client.commit(target, testDescriptor({ jobId: JOB, partitionId, attempt: 0, subpartitions: 1, token, type }), object.subpartitionBytes);
    }
    await t.client.release(t.server.url, token, JOB, 'a#0');
    await t.client.release(t.server.url, token, JOB, 'a#0');
    const gone = await rejectionOf(t.client.fetch({ url: t.server.url, token, jobId: JOB, partitionId: 'a#0', start: 0, end: 0 }));
    assert.ok(isShuffleError(gone, 'SHF_ERR_PARTITION_NOT_FOUND'));
    assert.equal(await t.client.releaseJob(t.server.url, token, JOB, true), 1);
    assert.deepEqual((await t.client.list(t.server.url, token, JOB)).map((p) => p.partitionId), ['b#0']);
    assert.equal((await t.objectFiles()).length, 1);
    assert.equal(await t.client.releaseJob(t.server.url, token, JOB, false), 1);
    assert.deepEqual(await t.client.list(t.server.url, token, JOB), []);
    assert.deepEqual(await t.objectFiles(), []);
    assert.equal(await t.metric('weft_shuffle_server_disk_used_bytes'), 0);
  });

  it('keeps committed partitions across a restart on the same directory and deletes pushes nobody committed', async () => {
    await using first = await startTestServer();
    const token = first.token(JOB);
    const kept = await encodeObject([[records('kept', 7)]]);
    const orphan = await encodeObject([[records('orphan', 7)]]);
    const at = (partitionId: string) => ({ url: first.server.url, token, jobId: JOB, partitionId, attempt: 0 });
    await first.client.push({ ...at('k#0'), body: [kept.bytes], length: kept.bytes.length });
    await first.client.commit(at('k#0'), testDescriptor({ jobId: JOB, partitionId: 'k#0', attempt: 0, subpartitions: 1, token }), kept.subpartitionBytes);
    await first.client.push({ ...at('o#0'), body: [orphan.bytes], length: orphan.bytes.length });
    const serverId = first.server.serverId;
    await first.client.close();
    await first.server.close();
    await using second = await startTestServer({ dir: first.dir.path });
    assert.equal(second.server.serverId, serverId, 'the server id survives a restart');
    assert.equal((await second.objectFiles()).length, 1, 'the uncommitted push is garbage after a restart');
    const [again] = await fetchedRecords(await second.client.fetch({ ...at('k#0'), url: second.server.url, start: 0, end: 0 }), 0, 0, 'k#0');
    assert.equal(again?.length, 7);
    assert.equal(await second.metric('weft_shuffle_server_partitions'), 1);
    assert.equal(await second.metric('weft_shuffle_server_disk_used_bytes'), kept.bytes.length);
  });

  it('pushes and commits in one request (x-weft-commit), and refuses a bad commit header before storing anything', async () => {
    await using t = await startTestServer();
    const token = t.token(JOB);
    const object = await encodeObject([[records('one-trip', 6)]]);
    const target = { url: t.server.url, token, jobId: JOB, partitionId: 'q#0', attempt: 0 };
    const descriptor = testDescriptor({ jobId: JOB, partitionId: 'q#0', attempt: 0, subpartitions: 1, token });
    const record = await t.client.pushAndCommit({ ...target, body: [object.bytes], length: object.bytes.length }, descriptor, object.subpartitionBytes);
    assert.deepEqual([record?.attempt, record?.totalBytes], [0, object.subpartitionBytes[0]]);
    assert.equal(await t.metric('weft_shuffle_server_request_duration_seconds_count{route="commit",status="200"}'), undefined, 'no separate commit request');
    const [read] = await fetchedRecords(await t.client.fetch({ ...target, start: 0, end: 0 }), 0, 0, 'q#0');
    assert.equal(read?.length, 6);
    const again = await t.client.pushAndCommit({ ...target, body: [object.bytes], length: object.bytes.length }, descriptor, object.subpartitionBytes);
    assert.equal(again?.attempt, 0, 'pushing the committed attempt again answers with its commit');
    for (const header of ['%%%not-base64', Buffer.from('{"descriptor":').toString('base64url'), Buffer.from(JSON.stringify({ descriptor: testDescriptor({ jobId: JOB, partitionId: 'other#0', attempt: 0, subpartitions: 1 }), subpartitionBytes: [1] })).toString('base64url')]) {
      const res = await request(`${t.server.url}/v1/jobs/${JOB}/partitions/h%230/attempts/0/data`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'x-weft-commit': header },
        body: object.bytes,
      });
      assert.deepEqual([res.statusCode, ((await res.body.json()) as { code: string }).code], [400, 'SHF_ERR_INVALID_ARGUMENT']);
    }
    assert.equal((await t.objectFiles()).length, 1, 'refused pushes store nothing');
  });

  it('with verifyPushChecksums off, stores a block with a damaged payload, which readers then refuse as SHF_ERR_DATA_CORRUPTED', async () => {
    await using t = await startTestServer({ verifyPushChecksums: false });
    const object = await encodeObject([[records('fragile', 50)]], 'none');
    const damaged = Buffer.from(object.bytes);
    damaged[100] = damaged[100]! ^ 0x20;
    const target = { url: t.server.url, token: t.token(JOB), jobId: JOB, partitionId: 'd#0', attempt: 0 };
    await t.client.push({ ...target, body: [damaged], length: damaged.length });
    await t.client.commit(target, testDescriptor({ jobId: JOB, partitionId: 'd#0', attempt: 0, subpartitions: 1, token: target.token }), object.subpartitionBytes);
    const error = await rejectionOf(fetchedRecords(await t.client.fetch({ ...target, start: 0, end: 0 }), 0, 0, 'd#0'));
    assert.ok(isShuffleError(error, 'SHF_ERR_DATA_CORRUPTED'), String(error));
    assert.equal(error.partitionId, 'd#0');
    const garbage = await rejectionOf(t.client.push({ ...target, partitionId: 'g#0', body: [Buffer.alloc(4096, 0x5a)], length: 4096 }));
    assert.ok(isShuffleError(garbage, 'SHF_ERR_DATA_CORRUPTED'), 'structure checks still refuse garbage');
  });
});
