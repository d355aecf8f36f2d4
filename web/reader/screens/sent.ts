import type { Reader, Screen } from '../app.ts';
import { h } from '../dom.ts';
import { signOutControl } from './parts.ts';

export function sentScreen(reader: Reader, to: string): Screen {
  const { t } = reader;
  return {
    name: 'sent',
    title: t.sent.title,
    render() {
      const back = h('button', { type: 'button', class: 'primary' }, t.sent.back);
      back.addEventListener('click', () => void reader.go.message());
      const signOut = signOutControl(reader, 'secondary');
      return h(
        'section',
        { class: 'card narrow sent' },
        h('span', { class: 'seal-mark big', 'aria-hidden': 'true' }, '✓'),
        h('h1', {}, t.sent.title),
        h('p', {}, t.sent.body(to)),
        signOut.alert,
        h('div', { class: 'actions' }, back, signOut.button),
      );
    },
  };
}
