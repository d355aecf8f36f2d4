/** IPFS Cluster stand-in: REST API + IPFS proxy speaking the real wire protocol, for dev and tests. */
export {
  startIpfsClusterStandIn,
  type IpfsClusterStandIn,
  type IpfsClusterStandInOptions,
  type RecordedRequest,
} from './server.ts';
export { runIpfsClusterStandIn } from './cli.ts';
export type { ClusterPin, PinInfo } from './state.ts';
export { kuboDefaultImportOptions } from './blocks.ts';
export { CLUSTER_VERSION } from './rest-api.ts';
