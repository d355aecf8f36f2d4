/**
 * Object storage: the interface and its drivers. `createObjectStore` picks the driver from config:
 * S3 when a bucket is configured, otherwise files under the data folder (no extra service to run).
 */
import { join } from 'node:path';
import { createLocalObjectStore } from './local.ts';
import { createS3ObjectStore } from './s3.ts';
import type { ObjectStore, ObjectStoreDriver } from './store.ts';

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

/** Every driver of OBJECT_STORE_DRIVERS by name; the type leaves no name out. */
export const OBJECT_STORE_REGISTRY: {
  readonly [Driver in ObjectStoreDriver]: (config: ObjectStoreConfig) => ObjectStore;
} = {
  local: (config) => createLocalObjectStore({ dir: join(config.dataDir, 'objects') }),
  s3: (config) => {
    const { bucket, ...s3 } = config.s3;
    if (!bucket) throw new Error('The S3 object store needs a bucket (S3_BUCKET)');
    return createS3ObjectStore({ ...s3, bucket });
  },
};

/** The driver the configuration asks for: S3 when a bucket is configured, otherwise local disk. */
export function objectStoreDriver(config: ObjectStoreConfig): ObjectStoreDriver {
  return config.s3.bucket ? 's3' : 'local';
}

export function createObjectStore(config: ObjectStoreConfig): ObjectStore {
  return OBJECT_STORE_REGISTRY[objectStoreDriver(config)](config);
}
