import type { Language } from '../../kernel/languages.ts';
import type { CodeMailer } from '../mail/code-mail.ts';
import type { AuthMetrics } from '../metrics.ts';
import type { SmsProvider } from '../sms/index.ts';
import { emailMethod } from './email.ts';
import type { SignInMethod } from './method.ts';
import { SIGN_IN_METHODS, type SignInMethodName } from './names.ts';
import { smsMethod } from './sms.ts';

/** What the methods are built from, once per service. */
export interface SignInMethodParts {
  provider: SmsProvider;
  /** SMS_TEXT, `{code}` replaced by the code. */
  smsText: string;
  mailer: CodeMailer;
  expiresInMinutes: number;
  /** The development SMS provider prints email codes too. */
  logCodes: boolean;
  metrics: AuthMetrics;
  /** NOTIFY_DEFAULT_LANGUAGE: for recipients whose sender chose no language. */
  defaultLanguage: Language;
}

/**
 * Every method of SIGN_IN_METHODS by name. A new method is a file in this folder, a name in the list and
 * a line here (the type leaves no name out).
 */
export const SIGN_IN_METHOD_REGISTRY: {
  readonly [Name in SignInMethodName]: (parts: SignInMethodParts) => SignInMethod;
} = {
  sms: (parts) => smsMethod({ provider: parts.provider, text: parts.smsText, metrics: parts.metrics }),
  email: (parts) =>
    emailMethod({
      mailer: parts.mailer,
      expiresInMinutes: parts.expiresInMinutes,
      logCodes: parts.logCodes,
      metrics: parts.metrics,
      defaultLanguage: parts.defaultLanguage,
    }),
};

/** Each listed method, built. */
export function createSignInMethods(parts: SignInMethodParts): Record<SignInMethodName, SignInMethod> {
  return Object.fromEntries(SIGN_IN_METHODS.map((name) => [name, SIGN_IN_METHOD_REGISTRY[name](parts)])) as Record<
    SignInMethodName,
    SignInMethod
  >;
}
