import { basicAuth, postToProvider, type SmsProvider } from './provider.ts';

/**
 * The generic adapter (docs/design.md#codes): POST JSON `{to, from, text}` with Basic auth; any 2xx is
 * success.
 */
export function httpSmsProvider(options: {
  url: string;
  user?: string;
  password?: string;
  from: string;
  timeoutMs: number;
}): SmsProvider {
  return {
    kind: 'http',
    async send({ to, text }) {
      await postToProvider(
        options.url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...basicAuth(options.user, options.password) },
          body: JSON.stringify({ to, from: options.from, text }),
        },
        options.timeoutMs,
        'SMS provider',
      );
    },
  };
}
