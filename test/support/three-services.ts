import { startAuthHarness, type AuthHarness } from './auth-harness.ts';
import { startQuietExchange } from './exchange-fuzz.ts';
import { startSealOnStandIn, startStandIn, type StandIn } from './seal.ts';
import type { ServiceUnderTest } from './services.ts';

export interface ThreeServices {
  exchange: ServiceUnderTest;
  standIn: StandIn;
  seal: ServiceUnderTest;
  harness: AuthHarness;
  stop(): Promise<void>;
}

/**
 * All three services side by side, for tests that walk every service (tokens, fuzzed bodies, oversized
 * headers): an exchange whose workers stay idle, the seal service on an IPFS Cluster stand-in, and the
 * auth service in its harness.
 */
export async function startThreeServices(auth: Parameters<typeof startAuthHarness>[0] = {}): Promise<ThreeServices> {
  const exchange = await startQuietExchange();
  const standIn = await startStandIn();
  const seal = await startSealOnStandIn(standIn);
  const harness = await startAuthHarness(auth);
  return {
    exchange,
    standIn,
    seal,
    harness,
    async stop() {
      await harness.stop();
      await seal.stop();
      await standIn.close();
      await exchange.stop();
    },
  };
}
