import type { Reader, Screen } from '../app.ts';
import { h } from '../dom.ts';

export function signedOutScreen(reader: Reader): Screen {
  const { t } = reader;
  return {
    name: 'signed-out',
    title: t.signedOut.title,
    render() {
      const again = h('button', { type: 'button', class: 'primary' }, t.signedOut.again);
      // A fresh session (new cookie, new CSRF token) before the next code is asked for.
      again.addEventListener('click', () => {
        void reader.api.config(reader.messageId).then(
          (config) => {
            reader.config = config;
            reader.go.signIn();
          },
          () => window.location.reload(),
        );
      });
      return h(
        'section',
        { class: 'card narrow' },
        h('h1', {}, t.signedOut.title),
        h('p', {}, t.signedOut.body),
        again,
      );
    },
  };
}
