import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { isShuffleError } from '@weft/shuffle-api';
import { parseMetaUrl } from '@weft/shuffle-remote';
import { isRedisUrl, parseRedisUrl, redactRedisUrl, redisClientOptions } from '@weft/shuffle-remote/redis';

const refusal = (setting: string, message: RegExp) => (error: unknown) =>
  isShuffleError(error, 'SHF_ERR_INVALID_CONFIG') && error.context['setting'] === setting && message.test(error.message);

describe('parseRedisUrl', () => {
  it('parses a Sentinel URL: every Sentinel (port 26379 when omitted, IPv6 in brackets), the primary name, the db, and one replica by default', () => {
    const endpoint = parseRedisUrl('redis+sentinel://:s3cret@10.0.0.1:26380,sentinel-b,[::1]:5000/mymaster/3', 'meta');
    assert.deepEqual(endpoint, {
      kind: 'sentinel',
      sentinels: [{ host: '10.0.0.1', port: 26380 }, { host: 'sentinel-b', port: 26379 }, { host: '::1', port: 5000 }],
      name: 'mymaster',
      db: 3,
      password: 's3cret',
      ack: { minReplicas: 1, replicaTimeoutMs: 1000, replicaTries: 30 },
      description: 'redis+sentinel://:***@10.0.0.1:26380,sentinel-b,[::1]:5000/mymaster/3',
    });
    const { reconnectOnError, ...client } = redisClientOptions(endpoint);
    assert.deepEqual(client, {
      sentinels: [{ host: '10.0.0.1', port: 26380 }, { host: 'sentinel-b', port: 26379 }, { host: '::1', port: 5000 }],
      name: 'mymaster', db: 3, password: 's3cret',
    });
    // a demoted primary answers READONLY: reconnect (to whichever node the Sentinels now name), do not resend
    assert.equal(typeof reconnectOnError === 'function' && reconnectOnError(new Error('READONLY You can\'t write against a read only replica.')), 1);
    assert.equal(typeof reconnectOnError === 'function' && reconnectOnError(new Error('ERR wrong number of arguments')), false);
    assert.equal(parseRedisUrl('redis+sentinel://h:1/m').db, 0);
  });

  it('parses a plain URL with no replica acknowledgement unless the query asks for one', () => {
    assert.deepEqual(parseRedisUrl('redis://user:p%40ss@127.0.0.2:6380/2'), {
      kind: 'direct', host: '127.0.0.2', port: 6380, tls: false, db: 2, username: 'user', password: 'p@ss',
      ack: { minReplicas: 0, replicaTimeoutMs: 1000, replicaTries: 30 }, description: 'redis://user:***@127.0.0.2:6380/2',
    });
    const tls = parseRedisUrl('rediss://cache.example:6390?minReplicas=2&replicaTimeoutMs=250&replicaTries=3');
    assert.equal(tls.kind === 'direct' && tls.tls, true);
    assert.deepEqual(tls.ack, { minReplicas: 2, replicaTimeoutMs: 250, replicaTries: 3 });
    assert.deepEqual(parseRedisUrl('redis+sentinel://h/m/0?minReplicas=0').ack.minReplicas, 0);
  });

  it('refuses bad URLs with SHF_ERR_INVALID_CONFIG naming the setting and the bad part, never the password', () => {
    const bad: [string, string, RegExp][] = [
      ['redis+sentinel://h1:26379,h2:26379/', 'meta', /names no primary/],
      ['redis+sentinel:///mymaster/0', 'meta', /names no Sentinel/],
      ['redis+sentinel://h1:26379,h2:port/mymaster/0', 'meta', /port "port"/],
      ['redis+sentinel://h1:99999/mymaster/0', 'meta', /port "99999".*1-65535/],
      ['redis+sentinel://h1/mymaster/zero', 'meta', /database must be a number.*"zero"/],
      ['redis+sentinel://h1/mymaster/0/extra', 'meta', /expected \/name\/db/],
      ['redis://h1,h2/0', 'meta', /several hosts; use redis\+sentinel/],
      ['redis:///0', 'meta', /names no host/],
      ['redis://h/zero', 'meta', /database must be a number/],
      ['http://h/0', 'meta', /unsupported scheme http:/],
      ['not a url', 'meta', /not a URL/],
      ['redis+sentinel://h/m/0?minReplica=1', 'meta.minReplica', /unknown parameter/],
      ['redis+sentinel://h/m/0?replicaTries=0', 'meta.replicaTries', /integer ≥ 1/],
    ];
    for (const [url, setting, message] of bad) assert.throws(() => parseRedisUrl(url, 'meta'), refusal(setting, message), url);
    assert.throws(() => parseRedisUrl('redis+sentinel://:hunter2@h1/m/x', 'meta'), (error: Error) => !error.message.includes('hunter2') && error.message.includes(':***@'));
  });

  it('is the parser behind --meta: a Sentinel URL is a Redis metadata store, its errors name the setting', () => {
    assert.deepEqual(parseMetaUrl('redis+sentinel://127.0.0.1:26379/weft/0'), { type: 'redis', url: 'redis+sentinel://127.0.0.1:26379/weft/0' });
    assert.throws(() => parseMetaUrl('redis+sentinel://127.0.0.1:26379/', '--meta'), refusal('--meta', /names no primary/));
    assert.equal(isRedisUrl('redis+sentinel://h/m'), true);
    assert.equal(isRedisUrl('sqlite:///x.db'), false);
    assert.equal(redactRedisUrl('redis://u:pw@h:1/0'), 'redis://u:***@h:1/0');
  });
});
