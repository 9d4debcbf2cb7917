import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', 'server/index': 'src/server/index.ts', 'client/index': 'src/client/index.ts', 'redis/index': 'src/redis/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  external: [/^node:/, /^@weft\//, '@aws-sdk/client-s3', 'ioredis', 'better-sqlite3', '@node-rs/crc32', 'aws-crt', 'lz4-napi', 'undici', 'prom-client'],
});
