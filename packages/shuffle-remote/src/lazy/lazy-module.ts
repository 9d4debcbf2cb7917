import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS dependency loaded on first use instead of at import: `@aws-sdk/client-s3` costs about 0.2 s
 * of CPU to load and ioredis about 0.08 s, in every process that imports this package — the job master,
 * each worker, each shuffle server — though a run on the embedded default (a directory and SQLite) never
 * touches either. The value reads like the module (`new awsS3.PutObjectCommand(…)`); the first property
 * read loads it, synchronously (both are CommonJS, so `require` needs no await).
 */
export function lazyModule<T extends object>(specifier: string): T {
  let loaded: T | undefined;
  const load = (): T => (loaded ??= require(specifier) as T);
  return new Proxy({} as T, {
    get: (_target, property) => Reflect.get(load(), property),
    has: (_target, property) => Reflect.has(load(), property),
  });
}
