import { basicAuth, postToProvider, type SmsProvider } from './provider.ts';

export const TWILIO_API = 'https://api.twilio.com';

/**
 * Twilio's Messages API: a form post to /2010-04-01/Accounts/{AccountSid}/Messages.json with Basic auth
 * (account SID and auth token). A sender starting with `MG` is a messaging service, sent as
 * MessagingServiceSid; anything else is the From number or alphanumeric sender id.
 */
export function twilioSmsProvider(options: {
  baseUrl: string;
  accountSid: string;
  authToken: string;
  from: string;
  timeoutMs: number;
}): SmsProvider {
  const url = `${options.baseUrl}/2010-04-01/Accounts/${encodeURIComponent(options.accountSid)}/Messages.json`;
  const senderField = /^MG[0-9a-f]{32}$/i.test(options.from) ? 'MessagingServiceSid' : 'From';
  return {
    kind: 'twilio',
    async send({ to, text }) {
      await postToProvider(
        url,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            ...basicAuth(options.accountSid, options.authToken),
          },
          body: new URLSearchParams({ To: to, [senderField]: options.from, Body: text }).toString(),
        },
        options.timeoutMs,
        'Twilio',
      );
    },
  };
}
