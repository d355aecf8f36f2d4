import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createObjectStore, OBJECT_STORE_DRIVERS, OBJECT_STORE_REGISTRY, objectStoreDriver } from './index.ts';

describe('object stores: one list', () => {
  it('has a driver in the registry for each listed name, which makes a store of that driver', async () => {
    assert.deepEqual(Object.keys(OBJECT_STORE_REGISTRY).sort(), [...OBJECT_STORE_DRIVERS].sort());
    const dataDir = await mkdtemp(join(tmpdir(), 'sealpost-objects-registry-'));
    try {
      for (const driver of OBJECT_STORE_DRIVERS) {
        // Nothing is reached until a call: an unused endpoint is enough to make the S3 store.
        const config = {
          dataDir,
          s3: {
            region: 'us-east-1',
            forcePathStyle: true,
            endpoint: 'http://127.0.0.1:9',
            bucket: driver === 's3' ? 'b' : undefined,
          },
        };
        assert.equal(objectStoreDriver(config), driver);
        const store = await createObjectStore(config);
        assert.equal(store.driver, driver);
        await store.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
