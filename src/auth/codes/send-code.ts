import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../kernel/clock.ts';
import type { Language } from '../../kernel/languages.ts';
import type { SignInMethod } from '../methods/method.ts';
import type { SendLimit } from './limits.ts';
import type { CodeTarget, PendingCodes } from './pending-codes.ts';

export interface CodeSending {
  sendLimit: SendLimit;
  codes: PendingCodes;
  clock: Clock;
}

/**
 * Sends a fresh code for `target` by `method` and makes it the session's pending code, replacing any
 * earlier one. The send is reserved under the limits first and given back when the provider did not take
 * it (an outage must not lock users out); the code is stored only once it went, so a failed send leaves
 * the earlier code valid.
 */
export async function sendCode(
  deps: CodeSending,
  sessionId: string,
  target: CodeTarget,
  how: { method: SignInMethod; client: string; log: FastifyBaseLogger; language?: Language },
): Promise<void> {
  const { method } = how;
  const reservation = await deps.sendLimit.count(
    { destination: method.limitKey(target.destination), client: how.client },
    new Date(deps.clock.now()),
  );
  const code = deps.codes.newCode();
  try {
    await method.send(target.destination, code, how.log, how.language);
  } catch (error) {
    await reservation.release();
    throw error;
  }
  await deps.codes.store(sessionId, target, code, new Date(deps.clock.now()));
}
