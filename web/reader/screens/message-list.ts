import { LIST_PAGE_SIZE, type MessagePage, type OpenableMessage } from '../api.ts';
import { alertBox, isSessionGone, type Reader } from '../app.ts';
import { h, uid } from '../dom.ts';
import { formatDate } from '../format.ts';
import { busy } from './parts.ts';

/**
 * The reader's other sealed messages that this sign-in opens too (GET /v1/messages), newest first, a page of
 * LIST_PAGE_SIZE at a time: each a link to its own page, which opens without another code. "Previous" and
 * "Next" are both always there (one disabled at either end) under the list, and the list keeps the tallest
 * height it had, so that neither button moves under the pointer from one page to the next. Focus stays on the
 * button pressed, or goes to the other when it is the end; the range ("Messages 21 to 40") is said politely.
 * A screen drawn again (a language switch, a reload, back from the sent screen) comes back to the page it showed:
 * the page and its cursors are kept (reader.kept.list).
 */
export function messageList(reader: Reader, first: MessagePage): HTMLElement | null {
  const { t } = reader;
  if (first.messages.length === 0 && !first.next) return null;
  const kept = reader.kept.list;
  /** The cursor that loads each page seen so far (none for the first); the next one once known. */
  const cursors: Array<string | undefined> =
    kept && kept.index > 0 ? kept.cursors.map((cursor) => cursor ?? undefined) : [undefined, first.next];
  let index = 0;
  let shown = first;

  const list = h('ul', {});
  const rangeId = uid('range');
  const range = h('p', { class: 'range', id: rangeId, role: 'status' });
  const previous = h('button', { type: 'button', class: 'secondary', 'aria-describedby': rangeId }, t.list.previous);
  const next = h('button', { type: 'button', class: 'secondary', 'aria-describedby': rangeId }, t.list.next);
  const alert = alertBox();
  const paged = first.next !== undefined;

  const draw = () => {
    // The height of the tallest page so far, so that a shorter one does not pull the buttons up.
    const height = list.getBoundingClientRect().height;
    if (height > 0) list.style.minHeight = `${Math.max(height, parseFloat(list.style.minHeight) || 0)}px`;
    list.replaceChildren(...shown.messages.map((message) => item(reader, message)));
    const from = index * LIST_PAGE_SIZE + 1;
    range.textContent = t.list.range(from, from + shown.messages.length - 1);
  };
  const enable = () => {
    previous.disabled = index === 0;
    next.disabled = cursors[index + 1] === undefined;
  };

  /** To page `to`; `restoring`: back to where the list was before it was drawn again, focus left alone. */
  const go = async (to: number, pressed: HTMLButtonElement, other: HTMLButtonElement, restoring = false) => {
    alert.clear();
    try {
      await busy(pressed, t.loading, async () => {
        const page = await reader.api.messages(cursors[to]);
        // The page kept from before a reload may be gone (messages ended since): the list starts again.
        if (restoring && page.messages.length === 0) {
          cursors.splice(0, cursors.length, undefined, first.next);
          reader.kept.list = undefined;
          return reader.save();
        }
        index = to;
        shown = page;
        cursors[to + 1] = page.next;
        reader.kept.list = { index, cursors: cursors.map((cursor) => cursor ?? null) };
        reader.save();
        draw();
      });
    } catch (error) {
      if (isSessionGone(error)) {
        reader.notice = t.sessionEnded;
        return reader.go.signIn();
      }
      alert.show(t, error);
    }
    enable();
    if (pressed.disabled && !restoring) other.focus();
  };
  previous.addEventListener('click', () => void go(index - 1, previous, next));
  next.addEventListener('click', () => void go(index + 1, next, previous));

  list.replaceChildren(...first.messages.map((message) => item(reader, message)));
  if (paged) {
    range.textContent = t.list.range(1, first.messages.length);
    enable();
    if (kept && kept.index > 0 && cursors[kept.index] !== undefined) void go(kept.index, next, previous, true);
  }
  return h(
    'section',
    { class: 'card others', 'aria-labelledby': 'others-title' },
    h('h2', { id: 'others-title' }, t.others.title),
    h('p', { class: 'hint' }, t.others.explain),
    list,
    paged ? h('nav', { class: 'pager', 'aria-label': t.list.navigation }, previous, next, range) : null,
    paged ? alert.element : null,
  );
}

function item(reader: Reader, other: OpenableMessage): HTMLElement {
  const { t } = reader;
  return h(
    'li',
    {},
    h(
      'a',
      { href: `/m/${encodeURIComponent(other.id)}` },
      h('span', { class: 'other-subject', dir: 'auto' }, other.subject || t.message.noSubject),
      h('span', { class: 'other-meta' }, t.others.meta(other.sender, formatDate(other.sealedAt, t.lang))),
    ),
  );
}
