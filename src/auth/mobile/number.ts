import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { AppError } from '../../kernel/errors.ts';

/**
 * A mobile number in E.164 (`+41791234567`), or undefined when it is not a valid number. Numbers must
 * be international (`+41 79 …`, or `0041 79 …`): a recipient may live anywhere, so there is no default
 * country to read a national number in.
 */
export function normalizeMobile(input: string | undefined): string | undefined {
  if (input === undefined || input.length > 64) return undefined;
  const text = input.trim().replace(/^00/, '+');
  const parsed = parsePhoneNumberFromString(text);
  return parsed?.isValid() ? parsed.number : undefined;
}

/** normalizeMobile for a route: the number in E.164, or the 400 every route that takes a number answers. */
export function requireMobile(input: string | undefined): string {
  const mobile = normalizeMobile(input);
  if (!mobile)
    throw new AppError(
      'invalid_mobile',
      400,
      'This is not a valid mobile number in international format (+41 79 123 45 67)',
    );
  return mobile;
}
