import { alertBox, type Reader, type Screen } from '../app.ts';
import { h } from '../dom.ts';
import { busy } from './parts.ts';

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
      return h('section', { class: 'card narrow' }, h('h1', {}, t.signedOut.title), h('p', {}, t.signedOut.body), again);
    },
  };
}

/**
 * The sign-out button and its alert. "You are signed out" only once the server has ended the session:
 * when GET /logout fails the session is still alive (on a shared computer the next person could read
 * on), so the reader must learn that and can try again.
 */
export function signOutControl(reader: Reader, buttonClass: string): { button: HTMLButtonElement; alert: HTMLElement } {
  const { t } = reader;
  const alert = alertBox();
  const button = h('button', { type: 'button', class: buttonClass }, t.message.signOut);
  button.addEventListener('click', () => {
    alert.clear();
    void busy(button, t.message.signingOut, async () => {
      try {
        await reader.api.logout();
      } catch (error) {
        alert.show(t, error, t.message.signOutFailed);
        return;
      }
      reader.go.signedOut();
    });
  });
  return { button, alert: alert.element };
}
