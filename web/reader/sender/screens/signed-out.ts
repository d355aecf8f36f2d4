import type { Screen } from '../../app.ts';
import { h } from '../../dom.ts';
import type { SenderPage } from '../page.ts';

export function signedOutScreen(page: SenderPage): Screen {
  const { t } = page;
  return {
    name: 'sender-signed-out',
    title: t.signedOut.title,
    render() {
      const again = h('button', { type: 'button', class: 'primary' }, t.signedOut.again);
      // A fresh session (new cookie, new CSRF token) before the next code is asked for.
      again.addEventListener('click', () => {
        void page.api.config().then(
          () => page.go.signIn(),
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
