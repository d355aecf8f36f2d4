import { type TLiteral, type TSchemaOptions, Type } from 'typebox';

/**
 * Every sign-in method, and the only list of them: SignInMethodName, the routes' schemas and the
 * registry (./registry.ts), which maps each name to its method, come from it.
 */
export const SIGN_IN_METHODS = ['sms', 'email'] as const;
export type SignInMethodName = (typeof SIGN_IN_METHODS)[number];

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };

/** A sign-in method's name in a request or an answer: the `anyOf` of constants, one per listed name. */
export function signInMethodSchema(options?: TSchemaOptions) {
  return Type.Union(SIGN_IN_METHODS.map((name) => Type.Literal(name)) as Literals<typeof SIGN_IN_METHODS>, options);
}
