import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createJobEventLog, parseJobEventLogUrl, SqliteJobEventLog } from '@weft/job-store';
import { createTempDir } from '@weft/testkit';

const refusal = (setting: string, pattern: RegExp) => (error: unknown) => {
  const e = error as { code?: string; context?: { setting?: string }; message: string };
  assert.equal(e.code, 'SHF_ERR_INVALID_CONFIG');
  assert.equal(e.context?.setting, setting);
  assert.match(e.message, pattern);
  return true;
};

describe('createJobEventLog', () => {
  it('parses the --meta URLs: sqlite:///abs/file.db and redis://host:port/db', () => {
    assert.deepEqual(parseJobEventLogUrl('sqlite:///var/weft/meta%20db.db'), { type: 'sqlite', path: '/var/weft/meta db.db' });
    assert.deepEqual(parseJobEventLogUrl('redis://10.0.0.5:6379/2'), { type: 'redis', url: 'redis://10.0.0.5:6379/2' });
    assert.deepEqual(parseJobEventLogUrl('rediss://user:pw@cache:6380'), { type: 'redis', url: 'rediss://user:pw@cache:6380' });
  });

  it('refuses a bad URL with SHF_ERR_INVALID_CONFIG naming the setting', async () => {
    await assert.rejects(createJobEventLog('sqlite://relative.db', { setting: '--meta' }), refusal('--meta', /three slashes/));
    await assert.rejects(createJobEventLog('sqlite:///dir/'), refusal('meta', /absolute file path/));
    await assert.rejects(createJobEventLog('s3://bucket/x', { setting: 'WEFT_META' }), refusal('WEFT_META', /expected sqlite:\/\/, redis:\/\/ or redis\+sentinel:\/\//));
    await assert.rejects(createJobEventLog('nothing'), refusal('meta', /not a URL/));
    await assert.rejects(createJobEventLog('redis://localhost:6379/zero'), refusal('meta', /database must be a number/));
    await assert.rejects(createJobEventLog('redis://127.0.0.1:1/0', { setting: '--meta', commandTimeoutMs: 500 }), refusal('--meta', /cannot reach Redis/));
  });

  it('refuses unknown and malformed options, naming them', async () => {
    await using dir = await createTempDir('weft-job-store-options-');
    const path = join(dir.path, 'x.db');
    assert.throws(() => new SqliteJobEventLog({ path }, { retryTimeout: 5 } as never), refusal('jobEventLog.retryTimeout', /unknown option/));
    assert.throws(() => new SqliteJobEventLog({ path }, { retryTimeoutMs: -1 }), refusal('jobEventLog.retryTimeoutMs', /integer >= 0/));
  });

  it('opens an SQLite log from its URL, creating the file', async () => {
    await using dir = await createTempDir('weft-job-store-url-');
    await using store = await createJobEventLog(`sqlite://${join(dir.path, 'sub', 'meta.db')}`);
    assert.equal(store.description, `sqlite://${join(dir.path, 'sub', 'meta.db')}`);
    assert.equal((await store.open({ jobId: 'j', owner: 't' })).epoch, 1);
  });
});
