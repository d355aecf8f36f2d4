import type { Screen } from '../../app.ts';
import { h } from '../../dom.ts';
import { errorReference, errorText } from '../../errors.ts';
import type { SenderTexts } from '../texts/index.ts';

export function loadingScreen(t: SenderTexts): Screen {
  return {
    name: 'loading',
    title: t.loading,
    render: () => h('section', { class: 'card narrow', 'aria-busy': 'true' }, h('h1', { class: 'quiet' }, t.loading)),
  };
}

/** Nothing else can be done (the service down): say why, offer a retry. */
export function fatalScreen(t: SenderTexts, error: unknown): Screen {
  return {
    name: 'fatal',
    title: t.fatal.title,
    render() {
      const retry = h('button', { type: 'button', class: 'primary' }, t.fatal.retry);
      retry.addEventListener('click', () => window.location.reload());
      const reference = errorReference(t, error);
      return h(
        'section',
        { class: 'card narrow' },
        h('h1', {}, t.fatal.title),
        h(
          'div',
          { class: 'alert', role: 'alert' },
          h('p', {}, errorText(t, error)),
          reference ? h('p', { class: 'reference' }, reference) : null,
        ),
        retry,
      );
    },
  };
}
