import type { FastifyBaseLogger } from 'fastify';
import type { AppError } from '../../kernel/errors.ts';
import type { Language } from '../../kernel/languages.ts';
import type { Recipient } from '../seal/recipients.ts';
import type { SignInMethodName } from '../tables.ts';

/**
 * A way to prove who one is (like Ory Kratos' strategies): where its code goes, how it is sent, and
 * which error a wrong code gets. `sms` and `email` implement it; the routes know nothing else about them.
 */
export interface SignInMethod {
  readonly name: SignInMethodName;
  /**
   * Where this recipient's code goes, given the (normalised) mobile number the reader typed; throws the
   * method's error when what was typed does not fit the record (email_and_mobile_mismatch).
   */
  destination(recipient: Recipient, typedMobile: string | undefined): string;
  /** The rate limits' key of a destination (per number, or per address for email codes). */
  limitKey(destination: string): string;
  /**
   * Sends the code, in the recipient's language where the method writes words (email); throws a 502
   * AppError when the provider did not take it.
   */
  send(destination: string, code: string, log: FastifyBaseLogger, language?: Language): Promise<void>;
  /** The answer to a wrong code for this method (incorrect_code, or invalid_code_or_email). */
  wrongCode(): AppError;
}
