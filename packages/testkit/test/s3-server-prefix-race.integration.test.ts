// s3rver, as testkit starts it, survives what a two-phase sink's markers do under one prefix: a
// PutObject of one key while another key of the same "directory" is deleted. s3rver's own DeleteObject
// removes the emptied directory, and the put then fails to open its file on an unheeded 'error' event:
// the server crashed and refused every later request (ECONNREFUSED). testkit turns that pruning off.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeleteObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { startS3Server } from '@weft/testkit';

describe('testkit s3rver', { timeout: 60_000 }, () => {
  it('keeps serving while keys of one prefix are written and deleted at once', async () => {
    const s3 = await startS3Server({ buckets: ['race'] });
    try {
      const client = s3.client();
      await client.send(new PutObjectCommand({ Bucket: 'race', Key: 'p/.in-progress/0', Body: 'm' }));
      for (let i = 1; i <= 300; i++) {
        await Promise.all([
          client.send(new PutObjectCommand({ Bucket: 'race', Key: `p/.in-progress/${i}`, Body: 'm' })),
          client.send(new DeleteObjectCommand({ Bucket: 'race', Key: `p/.in-progress/${i - 1}` })),
        ]);
      }
      const listed = await client.send(new ListObjectsV2Command({ Bucket: 'race', Prefix: 'p/' }));
      assert.deepEqual(listed.Contents?.map((c) => c.Key), ['p/.in-progress/300']);
    } finally {
      await s3.stop();
    }
  });
});
