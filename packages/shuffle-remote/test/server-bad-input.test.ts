import { strict as assert } from 'node:assert';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { request } from 'undici';
import { isShuffleError } from '@weft/shuffle-api';
import { rejectionOf } from '@weft/shuffle-api/testing';
import { encodeObject, eventually, fetchedRecords, rawExchange, testDescriptor, text } from './helpers/server-objects.js';
import { type TestServer, startTestServer } from './helpers/test-server.js';

// Every bad input goes to a real running server. After each, the server still serves, its partial data
// is gone, and a partition committed before is untouched.
const JOB = 'job-bad';

async function withCommitted(t: TestServer): Promise<{ check(): Promise<void> }> {
  const token = t.token(JOB);
  const object = await encodeObject([[Array.from({ length: 20 }, (_, i) => text(`good-${i}`))]]);
  const target = { url: t.server.url, token, jobId: JOB, partitionId: 'good#0', attempt: 0 };
  await t.client.push({ ...target, body: [object.bytes], length: object.bytes.length });
  await t.client.commit(target, testDescriptor({ jobId: JOB, partitionId: 'good#0', attempt: 0, subpartitions: 1, token }), object.subpartitionBytes);
  return {
    async check() {
      const [records] = await fetchedRecords(await t.client.fetch({ ...target, start: 0, end: 0 }), 0, 0, 'good#0');
      assert.deepEqual(records, Array.from({ length: 20 }, (_, i) => `good-${i}`), 'the committed partition must be untouched');
      assert.equal((await t.objectFiles()).length, 1, 'only the committed object may remain on disk');
      assert.equal(await t.metric('weft_shuffle_server_active_streams'), 0);
      // and the server still takes new data
      const fresh = await encodeObject([[[text('after')]]]);
      const next = { ...target, partitionId: `fresh#${Math.floor(Math.random() * 1e9)}` };
      await t.client.push({ ...next, body: [fresh.bytes], length: fresh.bytes.length });
      await t.client.abort(next);
    },
  };
}

function pushHead(t: TestServer, partitionId: string, headers: Record<string, string | number>): string {
  const lines = [`PUT /v1/jobs/${JOB}/partitions/${encodeURIComponent(partitionId)}/attempts/0/data HTTP/1.1`, `host: x`, `authorization: Bearer ${t.token(JOB)}`];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function chunk(bytes: Uint8Array): Uint8Array {
  return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]);
}

describe('shuffle server bad input', () => {
  it('refuses garbage, a flipped byte, a damaged footer, trailing bytes and an empty body with 400 SHF_ERR_DATA_CORRUPTED, deleting each', async () => {
    await using t = await startTestServer();
    const good = await withCommitted(t);
    const valid = await encodeObject([[Array.from({ length: 100 }, (_, i) => text(`v-${i}`))]], 'none');
    const flipped = Buffer.from(valid.bytes);
    flipped[40] = flipped[40]! ^ 0xff;
    const footer = Buffer.from(valid.bytes);
    footer[footer.length - 10] = footer[footer.length - 10]! ^ 0x01;
    const cases: [string, Uint8Array][] = [
      ['garbage', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) & 0xff))],
      ['a flipped payload byte', flipped],
      ['a damaged footer', footer],
      ['bytes after the footer', Buffer.concat([valid.bytes, Buffer.from('extra')])],
      ['an empty body', new Uint8Array(0)],
    ];
    for (const [what, body] of cases) {
      const res = await rawExchange(t.server.url, [pushHead(t, 'bad#0', { 'content-length': body.length }), body]);
      assert.equal(res.status, 400, what);
      assert.equal((res.body as { code: string }).code, 'SHF_ERR_DATA_CORRUPTED', what);
      assert.equal((res.body as { wire: number }).wire, 9, what);
    }
    await eventually(async () => (await t.objectFiles()).length === 1, 'the refused pushes to be deleted');
    assert.equal(await t.metric('weft_shuffle_server_uploads_discarded_total{reason="malformed"}'), cases.length);
    await good.check();
  });

  it('refuses a chunked stream that ends before the footer (truncated) and a Content-Length shorter than the object', async () => {
    await using t = await startTestServer();
    const good = await withCommitted(t);
    const valid = await encodeObject([[Array.from({ length: 300 }, (_, i) => text(`t-${i}`))]]);
    const half = valid.bytes.subarray(0, Math.floor(valid.bytes.length / 2));
    const truncated = await rawExchange(t.server.url, [pushHead(t, 'trunc#0', { 'transfer-encoding': 'chunked' }), chunk(half), '0\r\n\r\n']);
    assert.equal(truncated.status, 400);
    assert.match((truncated.body as { message: string }).message, /truncated/);
    const short = await rawExchange(t.server.url, [pushHead(t, 'short#0', { 'content-length': half.length }), valid.bytes]);
    assert.equal(short.status, 400);
    assert.equal((short.body as { code: string }).code, 'SHF_ERR_DATA_CORRUPTED');
    await eventually(async () => (await t.objectFiles()).length === 1, 'the truncated pushes to be deleted');
    await good.check();
  });

  it('cleans up a body shorter than its Content-Length when the client stops sending', async () => {
    await using t = await startTestServer();
    const good = await withCommitted(t);
    const valid = await encodeObject([[Array.from({ length: 300 }, (_, i) => text(`l-${i}`))]]);
    const socket = connect(Number(new URL(t.server.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(pushHead(t, 'liar#0', { 'content-length': valid.bytes.length * 2 }));
    socket.write(valid.bytes);
    await eventually(async () => (await t.metric('weft_shuffle_server_bytes_in_total')) !== undefined && (await t.objectFiles()).length === 2, 'the push to start');
    socket.end();
    await new Promise((resolve) => socket.once('close', resolve));
    await eventually(async () => (await t.objectFiles()).length === 1, 'the unfinished push to be deleted');
    await good.check();
  });

  it('refuses ids with "..", "/", control characters, bad escapes or excessive length, and huge or malformed numbers, with 400 naming the field', async () => {
    await using t = await startTestServer();
    const good = await withCommitted(t);
    const token = t.token(JOB);
    const cases: [string, string, string][] = [
      ['GET', `/v1/jobs/..%2F..%2Fetc/partitions`, 'jobId'],
      ['GET', `/v1/jobs/${JOB}/partitions/../data?start=0&end=0`, 'partitionId'],
      ['PUT', `/v1/jobs/${JOB}/partitions/a%2Fb/attempts/0/data`, 'partitionId'],
      ['PUT', `/v1/jobs/${JOB}/partitions/a%5Cb/attempts/0/data`, 'partitionId'],
      ['PUT', `/v1/jobs/${JOB}/partitions/a%00b/attempts/0/data`, 'partitionId'],
      ['PUT', `/v1/jobs/${JOB}/partitions/a%ZZ/attempts/0/data`, 'partitionId'],
      ['PUT', `/v1/jobs/${JOB}/partitions/${'x'.repeat(600)}/attempts/0/data`, 'partitionId'],
      ['PUT', `/v1/jobs/${JOB}/partitions/p%230/attempts/99999999999/data`, 'attempt'],
      ['PUT', `/v1/jobs/${JOB}/partitions/p%230/attempts/-1/data`, 'attempt'],
      ['PUT', `/v1/jobs/${JOB}/partitions/p%230/attempts/1e3/data`, 'attempt'],
      ['GET', `/v1/jobs/${JOB}/partitions/good%230/data?start=0&end=99999999999`, 'end'],
      ['GET', `/v1/jobs/${JOB}/partitions/good%230/data?start=0&end=1`, 'end'],
      ['GET', `/v1/jobs/${JOB}/partitions/good%230/data?start=-1&end=0`, 'start'],
      ['GET', `/v1/jobs/${JOB}/partitions/good%230/data?start=x&end=0`, 'start'],
      ['POST', `/v1/jobs/${JOB}/partitions/good%230/attempts/0/lease?ttlMs=99999999999`, 'ttlMs'],
    ];
    for (const [method, path, field] of cases) {
      const res = await rawExchange(t.server.url, [`${method} ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`]);
      assert.equal(res.status, 400, `${method} ${path}`);
      const body = res.body as { code: string; message: string };
      assert.equal(body.code, 'SHF_ERR_INVALID_ARGUMENT', `${method} ${path}`);
      assert.ok(body.message.includes(field), `${method} ${path}: the message should name ${field}: ${body.message}`);
    }
    const unknown = await rawExchange(t.server.url, [`GET /v2/anything HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`]);
    assert.deepEqual([unknown.status, (unknown.body as { wire: number }).wire], [404, 5]);
    const wrongMethod = await rawExchange(t.server.url, [`PATCH /v1/jobs/${JOB}/partitions HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`]);
    assert.deepEqual([wrongMethod.status, (wrongMethod.body as { wire: number }).wire], [405, 6]);
    await good.check();
  });

  it('refuses oversized bodies with 413 SHF_ERR_LIMIT_EXCEEDED: a declared length at once, a chunked stream once it passes the limit', async () => {
    await using t = await startTestServer({ maxBodyBytes: 256 * 1024, maxJsonBodyBytes: 4096 });
    const good = await withCommitted(t);
    const declared = await rawExchange(t.server.url, [pushHead(t, 'huge#0', { 'content-length': 10 * 1024 ** 3 })]);
    assert.deepEqual([declared.status, (declared.body as { code: string }).code, (declared.body as { wire: number }).wire], [413, 'SHF_ERR_LIMIT_EXCEEDED', 8]);
    const valid = await encodeObject([[Array.from({ length: 2000 }, (_, i) => text(`big-${i}-${'y'.repeat(200)}`))]], 'none');
    assert.ok(valid.bytes.length > 256 * 1024);
    const parts = [pushHead(t, 'huge#1', { 'transfer-encoding': 'chunked' })];
    for (let at = 0; at < valid.bytes.length; at += 16 * 1024) parts.push(chunk(valid.bytes.subarray(at, at + 16 * 1024)) as unknown as string);
    const streamed = await rawExchange(t.server.url, parts);
    assert.equal(streamed.status, 413);
    const commit = await request(`${t.server.url}/v1/jobs/${JOB}/partitions/good%230/attempts/0/commit`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token(JOB)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ padding: 'z'.repeat(10_000) }),
    });
    assert.deepEqual([commit.statusCode, ((await commit.body.json()) as { wire: number }).wire], [413, 16]);
    await eventually(async () => (await t.objectFiles()).length === 1, 'the oversized push to be deleted');
    await good.check();
  });

  it('refuses pushes and commits without a valid token before storing anything', async () => {
    await using t = await startTestServer();
    const good = await withCommitted(t);
    const valid = await encodeObject([[[text('sneaky')]]]);
    const cases: [string, string, number, string][] = [
      ['no Authorization header', '', 401, 'SHF_ERR_UNAUTHORIZED'],
      ['an empty bearer token', 'Bearer ', 401, 'SHF_ERR_UNAUTHORIZED'],
      ["another job's valid token", `Bearer ${t.token('someone-else')}`, 403, 'SHF_ERR_FORBIDDEN'],
      ['another scheme', `Basic ${Buffer.from('a:b').toString('base64')}`, 401, 'SHF_ERR_UNAUTHORIZED'],
    ];
    for (const [what, authorization, status, code] of cases) {
      const head = `PUT /v1/jobs/${JOB}/partitions/s%230/attempts/0/data HTTP/1.1\r\nhost: x\r\n${authorization === '' ? '' : `authorization: ${authorization}\r\n`}content-length: ${valid.bytes.length}\r\n\r\n`;
      const res = await rawExchange(t.server.url, [head, valid.bytes]);
      assert.deepEqual([res.status, (res.body as { code?: string }).code], [status, code], what);
    }
    assert.equal((await t.objectFiles()).length, 1, 'refused pushes store nothing');
    const commit = await rejectionOf(
      t.client.commit({ url: t.server.url, token: 'v1.AAAA.BBBB', jobId: JOB, partitionId: 'good#0', attempt: 0 }, testDescriptor({ jobId: JOB, partitionId: 'good#0', attempt: 0, subpartitions: 1 }), [1]),
    );
    assert.ok(isShuffleError(commit, 'SHF_ERR_UNAUTHORIZED'));
    await good.check();
  });

  it('refuses malformed commits: not JSON, a descriptor for another path, wrong sizes, nothing pushed', async () => {
    await using t = await startTestServer();
    const good = await withCommitted(t);
    const token = t.token(JOB);
    const post = async (partitionId: string, body: string): Promise<{ status: number; code: string; message: string }> => {
      const res = await request(`${t.server.url}/v1/jobs/${JOB}/partitions/${encodeURIComponent(partitionId)}/attempts/0/commit`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
      });
      const json = (await res.body.json()) as { code: string; message: string };
      return { status: res.statusCode, ...json };
    };
    const d = (partitionId: string, subpartitions = 1) => testDescriptor({ jobId: JOB, partitionId, attempt: 0, subpartitions, token });
    const notJson = await post('x#0', '{"descriptor":');
    assert.deepEqual([notJson.status, notJson.code], [400, 'SHF_ERR_INVALID_ARGUMENT']);
    const otherPath = await post('x#0', JSON.stringify({ descriptor: d('y#0'), subpartitionBytes: [1] }));
    assert.equal(otherPath.status, 400);
    assert.match(otherPath.message, /descriptor\.partition\.partitionId/);
    const sizes = await post('x#0', JSON.stringify({ descriptor: d('x#0', 2), subpartitionBytes: [1] }));
    assert.equal(sizes.status, 400);
    assert.match(sizes.message, /subpartitionBytes/);
    const negative = await post('x#0', JSON.stringify({ descriptor: d('x#0'), subpartitionBytes: [-5] }));
    assert.equal(negative.status, 400);
    const nothing = await post('x#0', JSON.stringify({ descriptor: d('x#0'), subpartitionBytes: [1] }));
    assert.deepEqual([nothing.status, nothing.code], [404, 'SHF_ERR_PARTITION_NOT_FOUND']);
    await good.check();
  });

  it('deletes the partial data of a client that vanishes mid-push, and of one that stalls past the idle timeout', async () => {
    await using t = await startTestServer({ idleTimeoutMs: 300 });
    const good = await withCommitted(t);
    const valid = await encodeObject([[Array.from({ length: 5000 }, (_, i) => text(`g-${i}-${'q'.repeat(100)}`))]], 'none');
    const port = Number(new URL(t.server.url).port);
    for (const how of ['vanish', 'stall'] as const) {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(pushHead(t, `${how}#0`, { 'transfer-encoding': 'chunked' }));
      socket.write(chunk(valid.bytes.subarray(0, valid.bytes.length / 2)));
      await eventually(async () => (await t.objectFiles()).length === 2, `the ${how} push to reach the disk`);
      assert.equal(await t.metric('weft_shuffle_server_active_streams'), 1);
      if (how === 'vanish') socket.destroy();
      // a stalled client: the server closes its connection once it is idle for idleTimeoutMs
      await new Promise((resolve) => (socket.destroyed ? resolve(undefined) : socket.once('close', resolve)));
      await eventually(async () => (await t.objectFiles()).length === 1, `the ${how} push to be deleted`);
    }
    assert.equal(await t.metric('weft_shuffle_server_uploads_discarded_total{reason="client-gone"}'), 2);
    await good.check();
  });

  it('stops reading from disk when a reader vanishes mid-fetch, and keeps serving', async () => {
    await using t = await startTestServer({ readChunkBytes: 16 * 1024 });
    const good = await withCommitted(t);
    const token = t.token(JOB);
    const big = await encodeObject([[Array.from({ length: 40_000 }, (_, i) => text(`f-${i}-${'w'.repeat(200)}`))]], 'none');
    const target = { url: t.server.url, token, jobId: JOB, partitionId: 'big#0', attempt: 0 };
    await t.client.push({ ...target, body: [big.bytes], length: big.bytes.length });
    await t.client.commit(target, testDescriptor({ jobId: JOB, partitionId: 'big#0', attempt: 0, subpartitions: 1, token }), big.subpartitionBytes);
    const socket = connect(Number(new URL(t.server.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`GET /v1/jobs/${JOB}/partitions/big%230/data?start=0&end=0 HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n\r\n`);
    await new Promise((resolve) => socket.once('data', resolve));
    socket.destroy();
    await eventually(async () => (await t.metric('weft_shuffle_server_active_streams')) === 0, 'the abandoned fetch to end');
    const sent = (await t.metric('weft_shuffle_server_bytes_out_total')) ?? 0;
    assert.ok(sent < big.bytes.length, `the server went on sending ${sent} of ${big.bytes.length} bytes to a vanished reader`);
    await t.client.release(t.server.url, token, JOB, 'big#0');
    await good.check();
  });

  it('refuses more concurrent streams than maxConcurrentStreams with a retryable 503 and Retry-After', async () => {
    await using t = await startTestServer({ maxConcurrentStreams: 1 }, { retryAttempts: 1 });
    const valid = await encodeObject([[Array.from({ length: 300 }, (_, i) => text(`c-${i}`))]]);
    const socket = connect(Number(new URL(t.server.url).port), '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(pushHead(t, 'slow#0', { 'transfer-encoding': 'chunked' }));
    socket.write(chunk(valid.bytes.subarray(0, 100)));
    await eventually(async () => (await t.metric('weft_shuffle_server_active_streams')) === 1, 'the first push to occupy the only stream');
    const raw = await rawExchange(t.server.url, [pushHead(t, 'second#0', { 'content-length': valid.bytes.length }), valid.bytes]);
    assert.deepEqual([raw.status, (raw.body as { code: string }).code, raw.headers['retry-after']], [503, 'SHF_ERR_LIMIT_EXCEEDED', '1']);
    const error = await rejectionOf(t.client.push({ url: t.server.url, token: t.token(JOB), jobId: JOB, partitionId: 'second#0', attempt: 0, body: [valid.bytes], length: valid.bytes.length }));
    assert.ok(isShuffleError(error, 'SHF_ERR_LIMIT_EXCEEDED') && error.retryable, String(error));
    socket.write(chunk(valid.bytes.subarray(100)));
    socket.write('0\r\n\r\n');
    await eventually(async () => (await t.metric('weft_shuffle_server_active_streams')) === 0, 'the first push to finish');
    socket.destroy();
    await t.client.push({ url: t.server.url, token: t.token(JOB), jobId: JOB, partitionId: 'second#0', attempt: 0, body: [valid.bytes], length: valid.bytes.length });
  });
});
