import type { Reader, Screen } from '../app.ts';
import { h } from '../dom.ts';

export function signedOutScreen(reader: Reader, everywhere = false): Screen {
  const { t } = reader;
  const said = everywhere ? t.sessions.signedOutEverywhere : t.signedOut;
  return {
    name: everywhere ? 'signed-out-everywhere' : 'signed-out',
    title: said.title,
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
      return h('section', { class: 'card narrow' }, h('h1', {}, said.title), h('p', {}, said.body), again);
    },
  };
}
