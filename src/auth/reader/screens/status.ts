import type { Reader, Screen } from '../app.ts';
import { h } from '../dom.ts';
import { errorReference, errorText } from '../errors.ts';

export function loadingScreen(reader: Pick<Reader, 't'>): Screen {
  return {
    name: 'loading',
    title: reader.t.loading,
    render: () => h('section', { class: 'card narrow', 'aria-busy': 'true' }, h('h1', { class: 'quiet' }, reader.t.loading)),
  };
}

/** Nothing else can be done on this page (unknown message, service down): say why, offer a retry. */
export function fatalScreen(reader: Pick<Reader, 't'>, error: unknown, text?: string): Screen {
  const { t } = reader;
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
        h('div', { class: 'alert', role: 'alert' }, h('p', {}, text ?? errorText(t, error)), reference ? h('p', { class: 'reference' }, reference) : null),
        retry,
      );
    },
  };
}
