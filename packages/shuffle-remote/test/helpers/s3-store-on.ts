import type { S3StoreOptions } from '@weft/shuffle-remote';
import type { S3Server } from '@weft/testkit';

/** S3 store options for a namespace (`prefix`) of `bucket` on a test s3rver, with S3's 5 MiB part minimum. */
export function s3StoreOn(server: S3Server, bucket: string, prefix: string): S3StoreOptions {
  return {
    type: 's3',
    bucket,
    prefix,
    endpoint: server.endpoint,
    region: server.region,
    accessKeyId: server.accessKeyId,
    secretAccessKey: server.secretAccessKey,
    minPartBytes: 5 * 1024 * 1024,
  };
}
