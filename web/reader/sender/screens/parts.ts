import { alertBox } from '../../app.ts';
import { h } from '../../dom.ts';
import { busy } from '../../screens/parts.ts';
import type { SenderPage } from '../page.ts';

/**
 * The sign-out button and its alert, as the reader's: "you are signed out" only once the server has ended
 * the session (GET /logout); when that fails the session is still alive, and the sender must learn it.
 */
export function signOutControl(page: SenderPage): { element: HTMLElement } {
  const { t } = page;
  const alert = alertBox();
  const button = h('button', { type: 'button', class: 'secondary small' }, t.signOut);
  button.addEventListener('click', () => {
    alert.clear();
    void busy(button, t.signingOut, async () => {
      try {
        await page.api.logout();
      } catch (error) {
        alert.show(t, error, t.signOutFailed);
        return;
      }
      page.sender = undefined;
      page.go.signedOut();
    });
  });
  return { element: h('div', { class: 'sign-out' }, button, alert.element) };
}

/** The top of the signed-in screens: who is signed in, and the sign-out. */
export function signedInBar(page: SenderPage): HTMLElement {
  return h(
    'div',
    { class: 'signed-in' },
    page.sender ? h('p', { class: 'hint' }, page.t.list.signedInAs(page.sender)) : null,
    signOutControl(page).element,
  );
}
