import { strict as assert } from 'node:assert';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { createTempDir, freePort, median } from '@weft/testkit';

describe('testkit helpers', () => {
  it('finds a port nothing listens on, which a server can then bind', async () => {
    const port = await freePort();
    assert.ok(port > 0 && port < 65536);
    const server = createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    await new Promise((resolve) => server.close(resolve));
  });

  it('creates a fresh temp directory and removes it on dispose', async () => {
    let path: string;
    {
      await using dir = await createTempDir('weft-testkit-');
      path = dir.path;
      assert.ok(existsSync(path));
    }
    assert.equal(existsSync(path), false);
  });

  it('takes the median of an odd count as its middle value and of an even count as the mean of the middle two, unsorted input left as it was', () => {
    const input = [9, 1, 5];
    assert.equal(median(input), 5);
    assert.deepEqual(input, [9, 1, 5]);
    assert.equal(median([4, 1, 3, 2]), 2.5);
  });
});
