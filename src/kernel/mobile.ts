import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/**
 * A mobile number in E.164 (`+41791234567`), or undefined when it is not a valid number. Spaces, dots,
 * dashes and brackets are allowed and `00` counts as `+`; the number must be international: a recipient may
 * live anywhere, so there is no default country to read a national number in. The full metadata
 * (`/max`), as the seal service checks X-Sealpost-Mobile.
 */
export function normalizeMobile(input: string | undefined): string | undefined {
  if (input === undefined || input.length > 64) return undefined;
  const text = input.trim().replace(/^00/, '+');
  if (!text.startsWith('+')) return undefined;
  const parsed = parsePhoneNumberFromString(text);
  return parsed?.isValid() ? parsed.number : undefined;
}
