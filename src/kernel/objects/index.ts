/**
 * Object storage: the interface and its two drivers. `createObjectStore` picks the driver from config:
 * S3 when a bucket is configured, otherwise files under the data folder (no extra service to run).
 */
import { join } from 'node:path';
import { createLocalObjectStore } from './local.ts';
import { createS3ObjectStore } from './s3.ts';
import type { ObjectStore } from './store.ts';

export * from './store.ts';
export { createLocalObjectStore, assertValidPrefix, LOCAL_TEMP_DIR } from './local.ts';
export { createS3ObjectStore, type S3ObjectStore, type S3ObjectStoreOptions } from './s3.ts';

export interface ObjectStoreConfig {
  s3: {
    endpoint?: string;
    bucket?: string;
    region: string;
    accessKeyId?: string;
    secretAccessKey?: string;
    forcePathStyle: boolean;
    /** Create the bucket on first write when missing (handy for development; off by default). */
    createBucket?: boolean;
  };
  dataDir: string;
}

export function createObjectStore(config: ObjectStoreConfig): ObjectStore {
  const { bucket, ...s3 } = config.s3;
  if (bucket) return createS3ObjectStore({ ...s3, bucket });
  return createLocalObjectStore({ dir: join(config.dataDir, 'objects') });
}
