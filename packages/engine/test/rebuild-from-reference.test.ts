// Rebuilding a file system or a stream connector from its reference, as worker processes do: the provider
// module imported and its export called with the reference's options; a module that cannot be imported, an
// export that is not a function, or a stream connector provider that returns something else fail with
// WEFT_ERR_TASK_EXECUTOR_LOST naming the module (such an executor cannot run the job's tasks).
import { strict as assert } from 'node:assert';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { rebuildFileSystem } from '../src/executor/rebuild-file-system.js';
import { rebuildStreamConnector } from '../src/executor/rebuild-stream-connector.js';

describe('rebuilding from a reference', () => {
  let dir = '';
  let module = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-rebuild-'));
    const file = join(dir, 'providers.mjs');
    await writeFile(
      file,
      `export const notAFunction = 42;
export function fileSystem(options) { return { schemes: ['mem'], madeWith: options }; }
export function connector(options) { return { schemes: ['redis'], open: () => undefined, madeWith: options }; }
export function notAConnector() { return { schemes: 'redis' }; }
`,
    );
    module = pathToFileURL(file).href;
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const lost = (pattern: RegExp) => (error: unknown) => (error as { code?: string }).code === 'WEFT_ERR_TASK_EXECUTOR_LOST' && pattern.test((error as Error).message);

  it("calls the module's export with the reference's options", async () => {
    const fs = (await rebuildFileSystem({ module, exportName: 'fileSystem', options: { root: '/x' } })) as unknown as { madeWith: unknown };
    assert.deepEqual(fs.madeWith, { root: '/x' });
    const connector = (await rebuildStreamConnector({ module, exportName: 'connector', options: [1, 2] })) as unknown as { madeWith: unknown };
    assert.deepEqual(connector.madeWith, [1, 2]);
  });

  it('fails naming a module it cannot import', async () => {
    const missing = pathToFileURL(join(dir, 'missing.mjs')).href;
    await assert.rejects(rebuildFileSystem({ module: missing, exportName: 'fileSystem', options: null }), lost(/cannot import the file system module .*missing\.mjs/));
    await assert.rejects(rebuildStreamConnector({ module: missing, exportName: 'connector', options: null }), lost(/cannot import the stream connector module .*missing\.mjs/));
  });

  it('fails naming an export that is not a function', async () => {
    await assert.rejects(rebuildFileSystem({ module, exportName: 'notAFunction', options: null }), lost(/providers\.mjs has no function export notAFunction/));
    await assert.rejects(rebuildStreamConnector({ module, exportName: 'absent', options: null }), lost(/providers\.mjs has no function export absent/));
  });

  it('fails when a stream connector provider returns no connector', async () => {
    await assert.rejects(rebuildStreamConnector({ module, exportName: 'notAConnector', options: null }), lost(/notAConnector did not return a StreamConnector/));
  });
});
