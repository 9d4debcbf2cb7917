import { lazyModule } from './lazy-module.js';

/** ioredis, loaded when the first Redis connection is made. */
export const ioredis = lazyModule<typeof import('ioredis')>('ioredis');
