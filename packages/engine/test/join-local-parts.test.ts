import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readlinkSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTempDir } from '@weft/testkit';
import { joinLocalParts } from '../src/job-master/join-local-parts.js';

describe('joinLocalParts', () => {
  it('writes the parts end to end, in order, whatever their sizes (empty, under and over a chunk, more parts than copiers)', async () => {
    await using dir = await createTempDir('weft-join-parts-');
    const sizes = [0, 1, 3 * 1024 * 1024 + 17, 0, 1024 * 1024, 5, 2 * 1024 * 1024 - 1, 0, 70_000];
    const contents = sizes.map((size) => randomBytes(size));
    const parts = await Promise.all(contents.map(async (bytes, i) => {
      const path = join(dir.path, `part-${i}`);
      await writeFile(path, bytes);
      return path;
    }));
    const target = join(dir.path, 'joined');
    await writeFile(target, 'an older, longer file that must not leave a tail behind'.repeat(200_000));
    const written = await joinLocalParts(target, parts);
    const expected = Buffer.concat(contents);
    assert.equal(written, expected.length);
    assert.ok((await readFile(target)).equals(expected), 'the joined file is the concatenation of the parts');
  });

  it('fails on a part it cannot read, once every other copy has stopped: no part file is left open', async () => {
    await using dir = await createTempDir('weft-join-parts-');
    const parts = [join(dir.path, 'not-a-file')];
    await mkdir(parts[0] as string);
    for (let i = 1; i < 12; i++) {
      const path = join(dir.path, `part-${i}`);
      await writeFile(path, randomBytes(2 * 1024 * 1024));
      parts.push(path);
    }
    await assert.rejects(joinLocalParts(join(dir.path, 'joined'), parts), { code: 'EISDIR' });
    // read at once, synchronously: a copier still running would hold its part open here
    const open = readdirSync('/proc/self/fd').map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    });
    assert.deepEqual(open.filter((target) => target.startsWith(dir.path)), [], 'no file of the join is open after it failed');
  });

  it('joins no parts into an empty file', async () => {
    await using dir = await createTempDir('weft-join-parts-');
    const target = join(dir.path, 'joined');
    assert.equal(await joinLocalParts(target, []), 0);
    assert.equal((await readFile(target)).length, 0);
  });
});
