import type { Clock } from '../kernel/clock.ts';
import type { App } from '../kernel/http.ts';
import type { ConfigInForce } from './clusters/in-force.ts';
import { clusterName } from './clusters/config.ts';
import { clusterConfigRoutes } from './clusters/routes.ts';
import type { ContactStore } from './contacts/contact-store.ts';
import { contactRoutes } from './contacts/routes.ts';
import type { ClusterConfigStore } from './clusters/store.ts';
import type { EndStore } from './ending/end-store.ts';
import type { SealEnder } from './ending/ender.ts';
import { endingRoutes } from './ending/routes.ts';
import type { Sealer } from './sealing/sealer.ts';
import { pinsRoutes } from './sealing/pins-routes.ts';
import type { Keyring } from './crypto/keyring.ts';
import type { KeyStore } from './keys/key-store.ts';
import { keyRoutes } from './keys/routes.ts';
import { scrubRoutes } from './scrub/routes.ts';
import type { ScrubStore } from './scrub/scrub-store.ts';
import { sealingRoutes } from './sealing/routes.ts';
import type { SealedStore } from './sealing/store.ts';
import { senderRoutes } from './senders/routes.ts';
import type { SenderStore } from './senders/sender-store.ts';
import { trailRoutes } from './trail/routes.ts';
import type { TrailStore } from './trail/trail-store.ts';

export interface SealPluginOptions {
  configStore: ClusterConfigStore;
  inForce: ConfigInForce;
  sealer: Sealer;
  sealedStore: SealedStore;
  endStore: EndStore;
  ender: SealEnder;
  trailStore: TrailStore;
  scrubStore: ScrubStore;
  keyStore: KeyStore;
  keyring: Keyring;
  senderStore: SenderStore;
  contactStore: ContactStore;
  /** SEAL_MAX_EXPIRY in milliseconds; undefined: no cap. */
  maxExpiryMs: number | undefined;
  adminToken: string;
  serviceToken: string;
  publicUrl: string;
  maxMessageSize: number;
  pinDeadlineMs: number;
  clock: Clock;
}

/**
 * The seal service's HTTP API: IPFS cluster configuration (admin), sealed messages (service), their end, their
 * trail, the sender's side, and the contacts directory.
 */
export async function sealPlugin(app: App, options: SealPluginOptions) {
  await app.register(clusterConfigRoutes, {
    store: options.configStore,
    inForce: options.inForce,
    adminToken: options.adminToken,
  });
  await app.register(sealingRoutes, {
    sealer: options.sealer,
    store: options.sealedStore,
    serviceToken: options.serviceToken,
    publicUrl: options.publicUrl,
    maxMessageSize: options.maxMessageSize,
    clock: options.clock,
  });
  await app.register(pinsRoutes, {
    store: options.sealedStore,
    adminToken: options.adminToken,
    deadlineMs: options.pinDeadlineMs,
    clock: options.clock,
  });
  await app.register(scrubRoutes, {
    store: options.scrubStore,
    clusters: options.inForce.clusters.map(clusterName),
    adminToken: options.adminToken,
  });
  await app.register(keyRoutes, { store: options.keyStore, keyring: options.keyring, adminToken: options.adminToken });
  await app.register(endingRoutes, {
    ender: options.ender,
    endStore: options.endStore,
    sealedStore: options.sealedStore,
    adminToken: options.adminToken,
    serviceToken: options.serviceToken,
    clock: options.clock,
  });
  await app.register(trailRoutes, {
    trailStore: options.trailStore,
    sealedStore: options.sealedStore,
    adminToken: options.adminToken,
    serviceToken: options.serviceToken,
  });
  await app.register(contactRoutes, {
    store: options.contactStore,
    adminToken: options.adminToken,
    serviceToken: options.serviceToken,
  });
  await app.register(senderRoutes, {
    senderStore: options.senderStore,
    trailStore: options.trailStore,
    endStore: options.endStore,
    ender: options.ender,
    serviceToken: options.serviceToken,
    maxExpiryMs: options.maxExpiryMs,
    clock: options.clock,
  });
}
