import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { createTempDir } from './temp-dir.js';
import { stopChild, trackChild } from './child-registry.js';

export interface StartS3ServerOptions {
  /** Buckets to create before returning. @defaultValue [] */
  readonly buckets?: readonly string[];
  /** How long to wait for the server to listen. @defaultValue 20000 */
  readonly startTimeoutMs?: number;
}

/**
 * A real S3-compatible server (s3rver 3.7.1) in its own process, on a free port, with its data in a temp
 * directory. `stop()` (or `await using`) ends it and removes the directory.
 */
export interface S3Server extends AsyncDisposable {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly port: number;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly region: string;
  /** Where s3rver keeps buckets and objects (`<dir>/<bucket>/...`). */
  readonly dir: string;
  createBucket(name: string): Promise<void>;
  /** An S3 client for this server (path-style, checksums only when required), owned by the server. */
  client(): S3Client;
  /** Stops the server and removes its directory. Idempotent. */
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);

/**
 * The code that runs s3rver's command line (`script`, its arguments after `--`) with its directory pruning
 * off. s3rver's DeleteObject removes the key's parent directories once they are empty, and a PutObject of
 * another key in the same directory at that moment fails to open its file (ENOENT) on an 'error' event
 * nobody listens to: s3rver crashes, and every later request is refused (ECONNREFUSED). A sink's markers
 * under one `.in-progress/` prefix, one written while another is deleted, did that about once in a dozen
 * runs. Its listings only count object files, so directories left empty change nothing else.
 */
function keepDirectories(script: string): string {
  const fsExtra = createRequire(script).resolve('fs-extra');
  return [
    `require(${JSON.stringify(fsExtra)}).rmdir = async () => {};`,
    `process.argv = [process.argv[0], ${JSON.stringify(script)}, ...process.argv.slice(1)];`,
    `require(${JSON.stringify(script)});`,
  ].join('\n');
}

/** Starts s3rver as `node --openssl-legacy-provider s3rver/bin/s3rver.js`; see S3Server. */
export async function startS3Server(options: StartS3ServerOptions = {}): Promise<S3Server> {
  const timeoutMs = options.startTimeoutMs ?? 20_000;
  const script = require.resolve('s3rver/bin/s3rver.js');
  const dir = await createTempDir('weft-s3rver-');
  const child: ChildProcess = spawn(
    process.execPath,
    ['--openssl-legacy-provider', '-e', keepDirectories(script), '--', '-d', dir.path, '-a', '127.0.0.1', '-p', '0', '--silent'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  trackChild(child);
  let port: number;
  try {
    port = await new Promise<number>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`s3rver did not start within ${timeoutMs} ms:\n${output}`)), timeoutMs);
      const onData = (data: Buffer): void => {
        output += data.toString();
        const match = /S3rver listening on [^:\s]+:(\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`s3rver exited (${code ?? signal}) before listening:\n${output}`));
      });
    });
  } catch (error) {
    await stopChild(child, 'SIGKILL', 0);
    await dir.remove();
    throw error;
  }
  // what it prints from now on, the last 16 KiB kept: an exit before stop() says why it went, with it
  // (a test then fails on ECONNREFUSED to its port, which alone does not tell a crash from a refusal)
  let tail = '';
  const keep = (data: Buffer): void => {
    tail = (tail + data.toString()).slice(-16 * 1024);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let stopping = false;
  child.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`testkit: s3rver on port ${port} exited before stop() (${code ?? signal}); its last output:\n${tail}\n`);
  });

  const endpoint = `http://127.0.0.1:${port}`;
  const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
  const region = 'us-east-1';
  let s3: S3Client | undefined;
  const client = (): S3Client =>
    (s3 ??= new S3Client({
      endpoint,
      region,
      credentials,
      forcePathStyle: true,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    }));
  const createBucket = async (name: string): Promise<void> => {
    await client().send(new CreateBucketCommand({ Bucket: name }));
  };
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      try {
        stopping = true;
        s3?.destroy();
        await stopChild(child, 'SIGTERM', 5_000);
      } finally {
        await dir.remove();
      }
    })());
  try {
    for (const bucket of options.buckets ?? []) await createBucket(bucket);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    endpoint,
    port,
    ...credentials,
    region,
    dir: dir.path,
    createBucket,
    client,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
