import type { Reader, Screen } from '../app.ts';
import { h } from '../dom.ts';
import { messageScreen } from './message.ts';
import { signedOutScreen } from './signed-out.ts';

export function sentScreen(reader: Reader, to: string): Screen {
  const { t } = reader;
  return {
    name: 'sent',
    title: t.sent.title,
    render() {
      const back = h('button', { type: 'button', class: 'primary' }, t.sent.back);
      back.addEventListener('click', () => void messageScreen(reader));
      const signOut = h('button', { type: 'button', class: 'secondary' }, t.message.signOut);
      signOut.addEventListener('click', () => {
        void reader.api
          .logout()
          .catch(() => undefined)
          .then(() => reader.show(signedOutScreen(reader)));
      });
      return h(
        'section',
        { class: 'card narrow sent' },
        h('span', { class: 'seal-mark big', 'aria-hidden': 'true' }, '✓'),
        h('h1', {}, t.sent.title),
        h('p', {}, t.sent.body(to)),
        h('div', { class: 'actions' }, back, signOut),
      );
    },
  };
}
