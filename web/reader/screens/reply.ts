import type { Draft, DraftFile, SealedMessage } from '../api.ts';
import { ApiError } from '../api-error.ts';
import { alertBox, isSessionGone, type Reader } from '../app.ts';
import { announce, h, uid } from '../dom.ts';
import { errorText, isCode, isEnded } from '../errors.ts';
import { formatBytes } from '../format.ts';
import { busy } from './parts.ts';
import { messageEnd } from './status.ts';

const SAVE_DELAY_MS = 800;

export type DraftOutcome = { draft: Draft } | { error: unknown };

export function loadDraft(reader: Reader): Promise<DraftOutcome> {
  return reader.api.draft().then(
    (draft) => ({ draft }),
    (error: unknown) => ({ error }),
  );
}

/**
 * The reply under the message. Without its saved draft there is no form: an empty one would overwrite
 * the draft at the first autosave, and a send would go without the draft's files. The reader gets the
 * reason and a button that tries again.
 */
export function replySection(
  reader: Reader,
  message: SealedMessage,
  outcome: DraftOutcome,
  notice?: string,
): HTMLElement {
  return 'draft' in outcome
    ? replyForm(reader, message, outcome.draft, notice)
    : draftFailed(reader, message, outcome.error);
}

function draftFailed(reader: Reader, message: SealedMessage, error: unknown): HTMLElement {
  const { t } = reader;
  const alert = alertBox();
  alert.show(t, error, t.reply.draftFailed);
  const retry = h('button', { type: 'button', class: 'secondary' }, t.reply.retry);
  const section = h(
    'section',
    { class: 'card reply', 'aria-labelledby': 'reply-title' },
    h('h2', { id: 'reply-title' }, t.reply.title),
    alert.element,
    retry,
  );
  retry.addEventListener('click', () => {
    void busy(retry, t.loading, async () => {
      const again = await loadDraft(reader);
      if ('error' in again && isSessionGone(again.error)) {
        reader.notice = t.sessionEnded;
        return reader.go.signIn();
      }
      if ('error' in again && isEnded(again.error)) return reader.go.ended(messageEnd(again.error), true);
      if ('error' in again) return alert.show(t, again.error, t.reply.draftFailed);
      const form = replySection(reader, message, again);
      section.replaceWith(form);
      form.querySelector('textarea')?.focus();
    });
  });
  return section;
}

/**
 * The reply form: text saved as a draft while typing (so it can be continued on another device), files
 * uploaded one by one with a progress bar, each removable, then send. The limits are the service's
 * (GET /v1/message/files); the page checks them first only to spare a long upload bound to fail.
 *
 * Every change (save, upload, removal, send) carries the draft's version and runs after the one before
 * it, so each sends the version the last one gave. When the draft changed elsewhere (another window or
 * device, draft_conflict), the form is replaced by the draft as it is now, with `notice` saying so:
 * nothing goes out that the page did not show.
 *
 * The save status sits under the send button, in a space of its own (app.css .save-status): a click on
 * the button blurs the text, which saves it, and the status appearing must not move the button between
 * the press and the release.
 */
function replyForm(reader: Reader, message: SealedMessage, draft: Draft, notice?: string): HTMLElement {
  const { t, api } = reader;
  const maxFile = draft.maxFileSize;
  const maxTotal = draft.maxTotalSize;
  const limitsText =
    maxFile !== undefined && maxTotal !== undefined
      ? t.reply.limits(formatBytes(t, maxFile), formatBytes(t, maxTotal))
      : undefined;
  const recipient = message.replyTo[0] ?? message.from[0];
  const recipientText = recipient
    ? recipient.name
      ? `${recipient.name} <${recipient.address}>`
      : recipient.address
    : '';
  const files: DraftFile[] = [...draft.files];
  let uploading = 0;
  let version = draft.version;
  /** Replaced after a conflict: nothing of this form may save or send any more. */
  let replaced = false;
  let changes: Promise<unknown> = Promise.resolve();
  /** One change at a time, each with the version the one before it left. */
  const change = <T>(run: () => Promise<T>): Promise<T> => {
    const next = changes.then(() => {
      if (replaced) throw new Replaced();
      return run();
    });
    changes = next.catch(() => undefined);
    return next;
  };
  const learn = (next: number | undefined) => {
    if (next !== undefined) version = next;
  };

  const alert = alertBox();
  const textId = uid('reply');
  const text = h('textarea', { id: textId, name: 'text', rows: 7, 'aria-describedby': `${textId}-status` });
  text.value = draft.text;
  const saveStatus = h(
    'p',
    { class: 'hint save-status', id: `${textId}-status`, role: 'status' },
    draft.text ? t.reply.draftRestored : '',
  );

  let saveTimer = 0;
  let saving: Promise<unknown> = Promise.resolve();
  const saveNow = () => {
    window.clearTimeout(saveTimer);
    if (replaced) return saving;
    saveStatus.textContent = t.reply.draftSaving;
    saving = change(() =>
      api.saveDraft({ text: text.value, ...(copy.checked && reader.email ? { bcc: reader.email } : {}) }, version),
    ).then(
      (next) => {
        learn(next);
        saveStatus.textContent = t.reply.draftSaved;
      },
      (error: unknown) => {
        if (error instanceof Replaced) return;
        if (isCode(error, 'draft_conflict')) return void reload();
        if (isEnded(error)) return handle(error);
        saveStatus.textContent = errorText(t, error);
      },
    );
    return saving;
  };
  text.addEventListener('input', () => {
    window.clearTimeout(saveTimer);
    saveTimer = window.setTimeout(() => void saveNow(), SAVE_DELAY_MS);
  });
  text.addEventListener('blur', () => {
    if (saveTimer) void saveNow();
    saveTimer = 0;
  });
  // Before the form is drawn again in another language: the text typed is saved, every change is done.
  reader.settle = () => {
    if (saveTimer) void saveNow();
    saveTimer = 0;
    return changes;
  };

  const list = h('ul', { class: 'files', 'aria-live': 'polite' });
  const used = h('p', { class: 'hint' });
  const total = () => files.reduce((sum, f) => sum + f.size, 0);
  const updateUsed = () => {
    if (maxTotal !== undefined) used.textContent = t.reply.used(formatBytes(t, total()), formatBytes(t, maxTotal));
  };

  const fileRow = (file: DraftFile): HTMLElement => {
    const remove = h('button', { type: 'button', class: 'link danger', 'aria-label': t.reply.remove(file.name) }, '✕');
    const row = h(
      'li',
      { class: 'file' },
      h('span', { class: 'file-name' }, file.name),
      h('span', { class: 'file-size' }, formatBytes(t, file.size)),
      remove,
    );
    remove.addEventListener('click', () => {
      alert.clear();
      void busy(remove, '…', async () => {
        try {
          learn(await change(() => api.removeFile(file.id, version)));
          files.splice(files.indexOf(file), 1);
          row.remove();
          updateUsed();
          announce(t.reply.removed(file.name));
          picker.focus();
        } catch (error) {
          handle(error);
        }
      });
    });
    return row;
  };
  for (const file of files) list.append(fileRow(file));
  updateUsed();

  const input = h('input', {
    type: 'file',
    multiple: true,
    class: 'visually-hidden',
    tabindex: -1,
    'aria-hidden': 'true',
    name: 'files',
  });
  const picker = h('button', { type: 'button', class: 'secondary' }, t.reply.addFiles);
  picker.addEventListener('click', () => input.click());
  input.addEventListener('change', () => {
    const chosen = Array.from(input.files ?? []);
    input.value = '';
    alert.clear();
    void uploadAll(chosen);
  });

  /** One after the other: the limits are checked against what is already attached. */
  async function uploadAll(chosen: File[]) {
    for (const file of chosen) await upload(file);
  }

  async function upload(file: File) {
    const progress = h('progress', { max: 100, value: 0, 'aria-label': t.reply.uploading(file.name) });
    const row = h(
      'li',
      { class: 'file uploading' },
      h('span', { class: 'file-name' }, file.name),
      h('span', { class: 'file-size' }, formatBytes(t, file.size)),
      progress,
    );
    const fail = (sentence: string) => {
      row.classList.replace('uploading', 'failed');
      const dismiss = h(
        'button',
        { type: 'button', class: 'link danger', 'aria-label': t.reply.remove(file.name) },
        '✕',
      );
      dismiss.addEventListener('click', () => {
        row.remove();
        picker.focus();
      });
      progress.replaceWith(dismiss);
      row.append(h('p', { class: 'file-error', role: 'alert' }, sentence));
    };
    list.append(row);
    // The server decides (it counts every byte); checking first spares a long upload bound to fail.
    if (maxFile !== undefined && file.size > maxFile)
      return fail(`${t.errors.file_too_large} ${limitsText ?? ''}`.trim());
    if (maxTotal !== undefined && total() + file.size > maxTotal) return fail(t.errors.upload_limit_reached);
    uploading += 1;
    try {
      const uploaded = await change(() =>
        api.uploadFile(file, (fraction) => (progress.value = Math.round(fraction * 100)), { version }),
      );
      learn(uploaded.version);
      const stored = uploaded.file;
      files.push(stored);
      row.replaceWith(fileRow(stored));
      updateUsed();
      announce(t.reply.uploaded(stored.name));
    } catch (error) {
      if (isSessionGone(error) || isEnded(error) || isCode(error, 'draft_conflict') || error instanceof Replaced)
        return handle(error);
      fail(errorText(t, error));
    } finally {
      uploading -= 1;
    }
  }

  const copyId = uid('copy');
  const copy = h('input', { type: 'checkbox', id: copyId, name: 'copy', checked: Boolean(draft.bcc) });
  copy.addEventListener('change', () => void saveNow());
  const copyRow = reader.email
    ? h('div', { class: 'check' }, copy, h('label', { for: copyId }, t.reply.copyToMe(reader.email)))
    : null;

  const send = h('button', { type: 'submit', class: 'primary' }, t.reply.send);
  const form = h(
    'form',
    { novalidate: true, class: 'reply-form' },
    h('p', {}, t.reply.to(recipientText)),
    h('div', { class: 'field' }, h('label', { for: textId }, t.reply.text), text),
    h(
      'fieldset',
      { class: 'attach' },
      h('legend', {}, t.reply.files),
      limitsText ? h('p', { class: 'hint' }, limitsText) : null,
      list,
      used,
      input,
      picker,
    ),
    copyRow,
    alert.element,
    send,
    saveStatus,
  );
  const section = h(
    'section',
    { class: 'card reply', 'aria-labelledby': 'reply-title' },
    h('h2', { id: 'reply-title' }, t.reply.title),
    form,
  );
  if (notice) alert.say(notice);

  /** The draft changed elsewhere: this form goes, the draft as it is now comes, saying why. */
  async function reload() {
    if (replaced) return;
    replaced = true;
    window.clearTimeout(saveTimer);
    const focused = section.contains(document.activeElement);
    const fresh = replySection(reader, message, await loadDraft(reader), t.reply.reloaded);
    section.replaceWith(fresh);
    if (focused) fresh.querySelector<HTMLElement>('[role=alert]:not([hidden]), textarea')?.focus();
    announce(t.reply.reloaded);
  }

  function handle(error: unknown) {
    if (error instanceof Replaced) return;
    if (isCode(error, 'draft_conflict')) {
      void reload();
      return;
    }
    if (error instanceof ApiError && error.version !== undefined) learn(error.version);
    if (isSessionGone(error)) {
      reader.notice = t.sessionEnded;
      reader.go.signIn();
      return;
    }
    // The message ended meanwhile: nothing of the reply can be saved or sent any more (the service deleted it).
    if (isEnded(error)) {
      replaced = true;
      window.clearTimeout(saveTimer);
      reader.go.ended(messageEnd(error), true);
      return;
    }
    alert.show(t, error);
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    alert.clear();
    if (uploading > 0) return alert.say(t.reply.waitForUploads);
    if (!text.value.trim() && files.length === 0) {
      alert.say(t.reply.empty);
      return text.focus();
    }
    window.clearTimeout(saveTimer);
    void busy(send, t.reply.sending, async () => {
      try {
        await saving;
        await change(() =>
          api.sendReply({ text: text.value, ...(copy.checked && reader.email ? { bcc: reader.email } : {}) }, version),
        );
        reader.go.sent(recipientText);
      } catch (error) {
        handle(error);
      }
    });
  });

  return section;
}

/** A change queued by a form that a conflict has replaced since. */
class Replaced extends Error {}
