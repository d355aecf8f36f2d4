/**
 * The sign-in methods are the seal contract's (a sealed message's recipients each have one): the list,
 * its type and its schema come from there, and ./registry.ts maps each name to its method here.
 */
export { SIGN_IN_METHODS, type SignInMethodName, signInMethodSchema } from '../../contracts/seal.ts';
