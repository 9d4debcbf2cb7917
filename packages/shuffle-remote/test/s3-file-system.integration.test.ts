// S3FileSystem against a real S3-compatible server (s3rver): listing like a directory, ranged reads,
// attempt objects that appear only once complete, and publishing that is invisible until commit, with
// rollback to what the key held before.
import assert from 'node:assert/strict';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { after, before, describe, it } from 'node:test';
import { type S3Server, startS3Server } from '@weft/testkit';
import { S3FileSystem } from '../src/index.js';

const BUCKET = 'weft-files-test';
const MIB = 1024 * 1024;

describe('S3FileSystem', () => {
  let s3: S3Server;
  let fs: S3FileSystem;
  before(async () => {
    s3 = await startS3Server({ buckets: [BUCKET] });
    const env = { AWS_ENDPOINT_URL_S3: s3.endpoint, AWS_REGION: s3.region, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
    fs = new S3FileSystem({ minPartBytes: 5 * MIB }, env);
  });
  after(async () => {
    await fs?.close();
    await s3?.stop();
  });

  const put = (key: string, body: string | Buffer) => s3.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
  const get = async (key: string): Promise<string | undefined> => {
    try {
      const out = await s3.client().send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      return await out.Body!.transformToString();
    } catch {
      return undefined;
    }
  };
  const keys = async (prefix: string): Promise<string[]> => ((await s3.client().send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }))).Contents ?? []).map((o) => o.Key!).sort();

  it('lists an object, or the objects directly under a prefix in name order without hidden ones, and refuses a missing one', async () => {
    await Promise.all([put('in/b.txt', 'bb\n'), put('in/a.txt', 'a\n'), put('in/_SUCCESS', ''), put('in/.hidden', 'x'), put('in/sub/c.txt', 'c\n')]);
    assert.deepEqual(await fs.list(`s3://${BUCKET}/in/a.txt`), [{ url: `s3://${BUCKET}/in/a.txt`, size: 2 }]);
    assert.deepEqual(await fs.list(`s3://${BUCKET}/in`), [
      { url: `s3://${BUCKET}/in/a.txt`, size: 2 },
      { url: `s3://${BUCKET}/in/b.txt`, size: 3 },
    ]);
    assert.deepEqual(await fs.list(`s3://${BUCKET}/in/`), await fs.list(`s3://${BUCKET}/in`));
    await assert.rejects(fs.list(`s3://${BUCKET}/nothing-here`), { code: 'SHF_ERR_INVALID_ARGUMENT' });
    await assert.rejects(fs.list('s3://B_ad/x'), { code: 'SHF_ERR_INVALID_ARGUMENT' });
  });

  it('reads byte ranges with one ranged GET each, short at the end and empty past it', async () => {
    await put('ranges.txt', '0123456789');
    const before = fs.stats.rangedReads;
    assert.equal(Buffer.from(await fs.read(`s3://${BUCKET}/ranges.txt`, 3, 4)).toString(), '3456');
    assert.equal(Buffer.from(await fs.read(`s3://${BUCKET}/ranges.txt`, 8, 100)).toString(), '89');
    assert.equal((await fs.read(`s3://${BUCKET}/ranges.txt`, 10, 5)).length, 0);
    assert.equal(fs.stats.rangedReads - before, 3);
  });

  it('writes an attempt object that exists only once complete, in one PutObject or as a multipart upload', async () => {
    for (const [name, bytes] of [['small', 1000], ['large', 11 * MIB + 17]] as const) {
      const url = `s3://${BUCKET}/out/.x.weft-j/part-00000@${name}`;
      const writer = await fs.createWriter(url);
      const line = `${name} line\n`;
      let text = '';
      while (text.length < bytes) text += line;
      for (let at = 0; at < text.length; at += MIB) await writer.write(text.slice(at, at + MIB));
      assert.equal(await fs.exists(url), false, `${name}: not visible before complete()`);
      await writer.complete();
      assert.equal(await get(`out/.x.weft-j/part-00000@${name}`), text, name);
    }
    const aborted = await fs.createWriter(`s3://${BUCKET}/out/aborted`);
    await aborted.write('x'.repeat(6 * MIB));
    await aborted.abort();
    assert.equal(await fs.exists(`s3://${BUCKET}/out/aborted`), false);
  });

  it('stages parts into the output key invisibly, commits it whole, and rolls back to what the key held', async () => {
    const big = 'y'.repeat(6 * MIB - 1) + '\n';
    await Promise.all([put('pub/.o.weft-j/p0', 'first\n'), put('pub/.o.weft-j/p1', big), put('pub/.o.weft-j/p2', 'last\n')]);
    const parts = ['p0', 'p1', 'p2'].map((p) => `s3://${BUCKET}/pub/.o.weft-j/${p}`);
    for (const target of ['pub/new.txt', 'pub/old.txt']) {
      if (target === 'pub/old.txt') await put(target, 'previous content\n');
      const before = await get(target);
      const staged = await fs.stage({ target: `s3://${BUCKET}/${target}`, parts, tempDir: `s3://${BUCKET}/pub/.o.weft-j` });
      assert.equal(await get(target), before, `${target}: staging publishes nothing`);
      await staged.commit();
      assert.equal(await get(target), `first\n${big}last\n`, `${target}: committed whole`);
      await staged.rollBack();
      assert.equal(await get(target), before, `${target}: rolled back to what it held`);
    }
    const discarded = await fs.stage({ target: `s3://${BUCKET}/pub/discarded.txt`, parts, tempDir: `s3://${BUCKET}/pub/.o.weft-j` });
    await discarded.discard();
    assert.equal(await fs.exists(`s3://${BUCKET}/pub/discarded.txt`), false);
    await fs.deleteUnder(`s3://${BUCKET}/pub/.o.weft-j`);
    assert.deepEqual(await keys('pub/'), ['pub/old.txt']);
  });
});
