import { alertBox, type Screen } from '../../app.ts';
import { announce, h, uid } from '../../dom.ts';
import { formatDate } from '../../format.ts';
import { busy } from '../../screens/parts.ts';
import { PAGE_SIZE, type SentMessage } from '../api.ts';
import type { ListState, SenderPage } from '../page.ts';
import { signedInBar } from './parts.ts';

/**
 * The sender's sealed messages, newest first, a page at a time ("show older messages" adds the next one in
 * place and moves the focus to its first message), searchable by a recipient's address or the subject.
 */
export function listScreen(page: SenderPage, state: ListState): Screen {
  const { t } = page;
  return {
    name: 'sender-list',
    title: t.list.title,
    render() {
      const searchId = uid('search');
      const search = h('input', {
        id: searchId,
        type: 'search',
        name: 'q',
        value: state.query,
        autocomplete: 'off',
        spellcheck: 'false',
        maxlength: 200,
      });
      const form = h(
        'form',
        { role: 'search', class: 'search' },
        h('label', { for: searchId }, t.list.search),
        h(
          'div',
          { class: 'search-row' },
          search,
          h('button', { type: 'submit', class: 'secondary' }, t.list.searchButton),
        ),
      );
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        void page.go.list(search.value.trim());
      });
      const showAll = state.query ? h('button', { type: 'button', class: 'link' }, t.list.showAll) : null;
      showAll?.addEventListener('click', () => void page.go.list());

      const list = h('ul', { class: 'sent-list' });
      const item = (message: SentMessage) => {
        const open = h(
          'button',
          { type: 'button', class: 'sent-item' },
          h('span', { class: 'sent-subject' }, message.subject || t.list.noSubject),
          h(
            'span',
            { class: 'sent-meta' },
            `${t.list.sealedOn(formatDate(message.sealedAt, t.lang))} · `,
            `${t.list.recipients(message.recipients.length)}: ${message.recipients.map((r) => r.email).join(', ')}`,
          ),
          message.end ? h('span', { class: 'sent-ended' }, t.list.ended) : null,
        );
        open.addEventListener('click', () => void page.go.detail(message.id));
        return h('li', {}, open);
      };
      for (const message of state.messages) list.append(item(message));

      const count = h('p', { class: 'hint', role: 'status' }, countText());
      function countText(): string {
        if (state.messages.length > 0) return t.list.results(state.messages.length);
        return state.query ? t.list.noMatch(state.query) : t.list.none;
      }

      const alert = alertBox();
      const older = h('button', { type: 'button', class: 'secondary', hidden: !state.more }, t.list.older);
      older.addEventListener('click', () => {
        alert.clear();
        const last = state.messages[state.messages.length - 1];
        void busy(older, t.list.loadingOlder, async () => {
          try {
            const next = await page.api.sealed({ before: last?.sealedAt, q: state.query || undefined });
            state.messages.push(...next);
            state.more = next.length >= PAGE_SIZE;
            const added = next.map(item);
            list.append(...added);
            count.textContent = countText();
            announce(countText());
            added[0]?.querySelector('button')?.focus();
          } catch (error) {
            alert.show(t, error);
          }
        }).then(() => (older.hidden = !state.more));
      });

      return h(
        'section',
        { class: 'card sender' },
        signedInBar(page),
        h('h1', {}, t.list.title),
        form,
        h('div', { class: 'list-status' }, count, showAll),
        list,
        alert.element,
        older,
      );
    },
  };
}
