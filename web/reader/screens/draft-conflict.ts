import type { Reader } from '../app.ts';
import { announce, h, uid } from '../dom.ts';
import { formatDate } from '../format.ts';

/**
 * The draft was changed in two windows: both texts side by side (this window's and the one saved in the other),
 * and three ways out — keep one, or both one after the other to edit into one. Nothing is dropped until the
 * recipient has chosen; `choose` gets the text the reply continues with.
 */
export function conflictChoice(
  reader: Reader,
  mine: string,
  theirs: string,
  choose: (text: string) => void,
): HTMLElement {
  const { t } = reader;
  const titleId = uid('conflict');
  const version = (label: string, text: string) => {
    const labelId = uid('version');
    return h(
      'div',
      { class: 'draft-version' },
      h('h4', { id: labelId }, label),
      // A region of its own, so that a long text scrolls inside it rather than pushing the buttons away.
      h('div', { class: 'draft-text', role: 'region', 'aria-labelledby': labelId, tabindex: 0 }, text),
    );
  };
  const keepMine = h('button', { type: 'button', class: 'secondary' }, t.drafts.keepMine);
  const keepTheirs = h('button', { type: 'button', class: 'secondary' }, t.drafts.keepTheirs);
  const keepBoth = h('button', { type: 'button', class: 'secondary' }, t.drafts.keepBoth);
  keepMine.addEventListener('click', () => choose(mine));
  keepTheirs.addEventListener('click', () => choose(theirs));
  keepBoth.addEventListener('click', () => choose(`${mine.trimEnd()}\n\n${theirs.trimStart()}`));
  const panel = h(
    'section',
    { class: 'draft-conflict', 'aria-labelledby': titleId, tabindex: -1 },
    h('h3', { id: titleId }, t.drafts.conflictTitle),
    h('p', {}, t.drafts.conflictExplain),
    h('div', { class: 'draft-versions' }, version(t.drafts.mine, mine), version(t.drafts.theirs, theirs)),
    h('div', { class: 'actions' }, keepMine, keepTheirs, keepBoth),
  );
  announce(t.drafts.conflictTitle);
  return panel;
}

/**
 * The final state of a reply form whose draft another window or device sent meanwhile: when it went, and what
 * was typed here and not sent, with a way to start a new reply from it. Never an empty form.
 */
export function alreadySentSection(
  reader: Reader,
  sentAt: string | undefined,
  unsent: string,
  startNew: (text: string, button: HTMLButtonElement) => void,
): HTMLElement {
  const { t } = reader;
  const unsentId = uid('unsent');
  // Always a way on: with nothing typed here, a new reply starts from the draft as it is now.
  const startButton = h(
    'button',
    { type: 'button', class: 'secondary' },
    unsent.trim() ? t.drafts.newReply : t.drafts.writeReply,
  );
  startButton.addEventListener('click', () => startNew(unsent, startButton));
  const sentence = sentAt ? t.drafts.alreadySent(formatDate(sentAt, t.lang)) : t.errors.reply_already_sent;
  return h(
    'section',
    { class: 'card reply already-sent', 'aria-labelledby': 'reply-title' },
    h('h2', { id: 'reply-title', tabindex: -1 }, t.drafts.alreadySentTitle),
    h('p', { class: 'sent-at', role: 'status' }, sentence),
    h('p', {}, t.drafts.alreadySentExplain),
    unsent.trim()
      ? h(
          'div',
          { class: 'field' },
          h('label', { for: unsentId }, t.drafts.unsent),
          h('textarea', { id: unsentId, rows: 5, readonly: true }, unsent),
        )
      : null,
    startButton,
  );
}
