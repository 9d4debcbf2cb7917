// A server process for server.bench.ts: `shuffle <dir> [json options]` runs a shuffle server; `bare <dir>`
// runs the baseline, a bare node:http server that stores a PUT body in a file (pipeline to an fs write
// stream) and streams it back on GET. Prints {"url"} once it listens; exits on SIGTERM.
import { createReadStream, createWriteStream } from 'node:fs';
import { stat, unlink } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { startShuffleServer } from '@weft/shuffle-remote/server';

const [mode, dir, json] = process.argv.slice(2) as [string, string, string | undefined];

if (mode === 'shuffle') {
  const server = await startShuffleServer({ dir, secret: 'bench-secret-0123456789', ...(JSON.parse(json ?? '{}') as object) });
  process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
  process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
} else {
  const server = createServer((req, res) => {
    const name = encodeURIComponent(req.url ?? '/');
    const path = join(dir, name);
    const fail = (error: unknown): void => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
      else res.destroy();
    };
    if (req.method === 'PUT') {
      pipeline(req, createWriteStream(path, { highWaterMark: 1024 * 1024 })).then(() => res.writeHead(201).end(), fail);
    } else if (req.method === 'GET') {
      stat(path).then((s) => {
        res.writeHead(200, { 'content-length': s.size });
        return pipeline(createReadStream(path, { highWaterMark: 1024 * 1024 }), res);
      }).catch(fail);
    } else if (req.method === 'DELETE') {
      unlink(path).then(() => res.writeHead(204).end(), fail);
    } else {
      res.writeHead(405).end();
    }
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
