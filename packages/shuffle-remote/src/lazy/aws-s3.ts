import { lazyModule } from './lazy-module.js';

/** `@aws-sdk/client-s3`, loaded when an S3 store or file system first makes a client or a command. */
export const awsS3 = lazyModule<typeof import('@aws-sdk/client-s3')>('@aws-sdk/client-s3');
