/**
 * Object storage: the interface and its drivers. `createObjectStore` picks the driver from config:
 * S3 when a bucket is configured, otherwise files under the data folder (no extra service to run).
 * The S3 driver (s3.ts, which loads the AWS SDK: about 6 MB of heap and 30 MB of RSS) is imported only
 * when it is the one asked for; code that needs it by name imports it from s3.ts.
 */
import { join } from 'node:path';
import { createLocalObjectStore } from './local.ts';
import type { ObjectStore, ObjectStoreDriver } from './store.ts';

export * from './store.ts';
export { createLocalObjectStore, assertValidPrefix, LOCAL_TEMP_DIR } from './local.ts';
export type { S3ObjectStore, S3ObjectStoreOptions } from './s3.ts';

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
  readonly [Driver in ObjectStoreDriver]: (config: ObjectStoreConfig) => Promise<ObjectStore>;
} = {
  local: async (config) => createLocalObjectStore({ dir: join(config.dataDir, 'objects') }),
  s3: async (config) => {
    const { bucket, ...s3 } = config.s3;
    if (!bucket) throw new Error('The S3 object store needs a bucket (S3_BUCKET)');
    const { createS3ObjectStore } = await import('./s3.ts');
    return createS3ObjectStore({ ...s3, bucket });
  },
};

/** The driver the configuration asks for: S3 when a bucket is configured, otherwise local disk. */
export function objectStoreDriver(config: ObjectStoreConfig): ObjectStoreDriver {
  return config.s3.bucket ? 's3' : 'local';
}

export function createObjectStore(config: ObjectStoreConfig): Promise<ObjectStore> {
  return OBJECT_STORE_REGISTRY[objectStoreDriver(config)](config);
}
