import type { Draft, DraftFile, SealedMessage } from '../api.ts';
import { ApiError } from '../api-error.ts';
import { alertBox, isSessionGone, type Reader } from '../app.ts';
import type { KeptReply } from '../kept.ts';
import { announce, h, uid } from '../dom.ts';
import { errorText, isCode, isEnded } from '../errors.ts';
import { formatBytes, formatDate } from '../format.ts';
import { alreadySentSection, conflictChoice } from './draft-conflict.ts';
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
export function replySection(reader: Reader, message: SealedMessage, outcome: DraftOutcome): HTMLElement {
  // What the saved draft does not hold, kept across a language switch, a reload and a new sign-in (kept.ts): the
  // final "already sent" state with what was typed here, or this window's text while the recipient chooses.
  const kept = reader.kept.reply;
  if (kept && 'sent' in kept) return sentElsewhere(reader, message, kept.sent.sentAt, kept.sent.unsent);
  if (!('draft' in outcome)) return draftFailed(reader, message, outcome.error);
  return replyForm(reader, message, outcome.draft, undefined, kept && 'choice' in kept ? kept.choice.mine : undefined);
}

/** The reply's state beyond the saved draft, written for a reload (none: the form shows the draft as it is). */
function keepReply(reader: Reader, reply: KeptReply | undefined): void {
  reader.kept.reply = reply;
  reader.save();
}

/** The reply's final state after another window or device sent it: when, and what was typed here and not sent. */
function sentElsewhere(
  reader: Reader,
  message: SealedMessage,
  sentAt: string | undefined,
  unsent: string,
): HTMLElement {
  keepReply(reader, { sent: { ...(sentAt !== undefined ? { sentAt } : {}), unsent } });
  const ended: HTMLElement = alreadySentSection(reader, sentAt, unsent, (kept, button) => {
    void busy(button, reader.t.loading, () => newReplyWith(reader, message, kept, ended));
  });
  return ended;
}

/**
 * A new reply from the text a window typed while another sent the draft: the new draft's text (if the other
 * window started one already) comes first, then this one, saved at once. Nothing typed here is dropped: the
 * "already sent" state stays kept until the form holds the text (a failed load offers to try again, back to it).
 */
async function newReplyWith(reader: Reader, message: SealedMessage, unsent: string, section: HTMLElement) {
  const outcome = await loadDraft(reader);
  if ('error' in outcome) {
    if (isSessionGone(outcome.error)) {
      reader.notice = reader.t.sessionEnded;
      return reader.go.signIn();
    }
    if (isEnded(outcome.error)) return reader.go.ended(messageEnd(outcome.error), true);
    return section.replaceWith(draftFailed(reader, message, outcome.error));
  }
  keepReply(reader, undefined);
  const { draft } = outcome;
  const text = !unsent.trim()
    ? undefined
    : draft.text && draft.text !== unsent
      ? `${draft.text.trimEnd()}\n\n${unsent.trimStart()}`
      : unsent;
  const form = replyForm(reader, message, draft, text);
  section.replaceWith(form);
  form.querySelector('textarea')?.focus();
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
 * device, draft_conflict), the page loads it as it is now and merges against `base`, the text of the
 * version it last knew: a text changed on one side only is taken as it is; changed on both, the two are
 * shown for the recipient to choose (conflictChoice) and nothing is saved until they have. The file list
 * becomes the draft's (the files of both windows); a refused upload or removal is tried again once on the
 * new version. A send that met a change is not tried again: nothing goes out that the page did not show.
 * When the draft was sent from elsewhere (reply_already_sent), the form ends in alreadySentSection.
 *
 * The save status sits under the send button, in a space of its own (app.css .save-status): a click on
 * the button blurs the text, which saves it, and the status appearing must not move the button between
 * the press and the release.
 */
function replyForm(
  reader: Reader,
  message: SealedMessage,
  draft: Draft,
  /** Put in the text box and saved at once (a new reply from text that was not sent). */
  initialText?: string,
  /** This window's text, to choose between it and the draft's (held across a redraw while choosing). */
  pendingMine?: string,
): HTMLElement {
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
  /** The text of the draft at `version`, as this window last knew it: what a merge compares both sides to. */
  let base = draft.text;
  /** Both windows changed the text: the choice shown, and nothing saved until it is made. */
  let choosing: HTMLElement | null = null;
  /** Replaced (the draft was sent elsewhere, or the message ended): nothing of this form may change any more. */
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
  /** A change of ours went through: the draft is at `next`, with `saved` as its text when the change saved one. */
  const learn = (next: number | undefined, saved?: string) => {
    if (next !== undefined) version = next;
    if (saved !== undefined) base = saved;
  };

  const alert = alertBox();
  const textId = uid('reply');
  const text = h('textarea', { id: textId, name: 'text', rows: 7, 'aria-describedby': `${textId}-status` });
  text.value = initialText ?? draft.text;
  const saveStatus = h(
    'p',
    { class: 'hint save-status', id: `${textId}-status`, role: 'status' },
    draft.text ? t.reply.draftRestored : '',
  );

  let saveTimer = 0;
  let saving: Promise<unknown> = Promise.resolve();
  const saveNow = (): Promise<unknown> => {
    window.clearTimeout(saveTimer);
    saveTimer = 0;
    if (replaced || choosing) return saving;
    saveStatus.textContent = t.reply.draftSaving;
    let sent = '';
    saving = change(() => {
      sent = text.value;
      return api.saveDraft({ text: sent, ...(copy.checked && reader.email ? { bcc: reader.email } : {}) }, version);
    }).then(
      (next) => {
        learn(next, sent);
        if (saveStatus.textContent === t.reply.draftSaving) saveStatus.textContent = t.reply.draftSaved;
      },
      async (error: unknown) => {
        if (error instanceof Replaced) return;
        if (isCode(error, 'draft_conflict')) {
          // Merged without a choice to make: this window's text is saved on the draft's new version.
          if ((await resync()) === 'merged' && text.value !== base) return saveNow();
          if (saveStatus.textContent === t.reply.draftSaving) saveStatus.textContent = t.reply.draftSaved;
          return;
        }
        if (isEnded(error) || isCode(error, 'reply_already_sent') || isSessionGone(error)) return handle(error);
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
    return saving.then(() => changes);
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
          learn(await retried(() => api.removeFile(file.id, version)));
        } catch (error) {
          // Removed in the other window meanwhile: gone all the same.
          if (!isCode(error, 'not_found')) return handle(error);
        }
        const at = files.findIndex((listed) => listed.id === file.id);
        if (at >= 0) files.splice(at, 1);
        row.remove();
        updateUsed();
        announce(t.reply.removed(file.name));
        picker.focus();
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
      const uploaded = await retried(() =>
        api.uploadFile(file, (fraction) => (progress.value = Math.round(fraction * 100)), { version }),
      );
      learn(uploaded.version);
      const stored = uploaded.file;
      files.push(stored);
      row.replaceWith(fileRow(stored));
      updateUsed();
      announce(t.reply.uploaded(stored.name));
    } catch (error) {
      if (
        isSessionGone(error) ||
        isEnded(error) ||
        isCode(error, 'draft_conflict', 'reply_already_sent') ||
        error instanceof Replaced
      )
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
    draft.lastSentAt ? h('p', { class: 'hint' }, t.drafts.lastSent(formatDate(draft.lastSentAt, t.lang))) : null,
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
  if (pendingMine !== undefined && pendingMine !== draft.text) {
    text.value = pendingMine;
    showChoice(pendingMine, draft.text);
  } else if (pendingMine !== undefined) keepReply(reader, undefined);
  else if (initialText !== undefined && initialText !== draft.text) void saveNow();

  /**
   * A file added or removed is a change of its own, which no text typed elsewhere conflicts with: refused
   * on an outdated version, it is made again once on the draft's new one (the list then shows both windows').
   */
  async function retried<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await change(run);
    } catch (error) {
      if (!isCode(error, 'draft_conflict')) throw error;
      await resync();
      return change(run);
    }
  }

  /** The files as the draft has them now, those still uploading or refused here kept below them. */
  function showFiles(stored: DraftFile[]) {
    files.splice(0, files.length, ...stored);
    for (const row of Array.from(list.querySelectorAll('li.file:not(.uploading):not(.failed)'))) row.remove();
    list.prepend(...stored.map(fileRow));
    updateUsed();
  }

  /**
   * The draft changed elsewhere: it is loaded as it is now and merged with this window's. 'merged': the
   * version is the draft's, and this window's text is whatever it should go on with (saved by the caller
   * when it differs); 'choosing': both changed the text, the recipient chooses first; 'failed': said.
   */
  async function resync(): Promise<'merged' | 'choosing' | 'failed'> {
    if (choosing) return 'choosing';
    let fresh: Draft;
    try {
      fresh = await api.draft();
    } catch (error) {
      handle(error);
      return 'failed';
    }
    if (replaced) return 'failed';
    showFiles(fresh.files);
    const mine = text.value;
    const theirs = fresh.text;
    const known = base;
    version = fresh.version;
    base = theirs;
    // Changed on one side only (or the same on both): nothing to choose.
    if (theirs === mine || theirs === known) return 'merged';
    if (mine === known) {
      text.value = theirs;
      saveStatus.textContent = t.drafts.updated;
      return 'merged';
    }
    showChoice(mine, theirs);
    return 'choosing';
  }

  /** Both windows changed the text: nothing is saved until the recipient has chosen. */
  function showChoice(mine: string, theirs: string) {
    window.clearTimeout(saveTimer);
    saveStatus.textContent = '';
    saveTimer = 0;
    const focused = section.contains(document.activeElement);
    text.readOnly = true;
    keepReply(reader, { choice: { mine } });
    choosing = conflictChoice(reader, mine, theirs, (chosen) => {
      keepReply(reader, undefined);
      choosing?.remove();
      choosing = null;
      text.readOnly = false;
      text.value = chosen;
      text.focus();
      saveStatus.textContent = t.drafts.chosen;
      void saveNow();
    });
    // Below the send button and its status: nothing the pointer may be on moves when the choice appears.
    saveStatus.after(choosing);
    if (focused) choosing.focus();
  }

  /** The draft this form showed was sent from another window or device: the form ends, saying when. */
  function alreadySent(error: ApiError) {
    replaced = true;
    window.clearTimeout(saveTimer);
    const ended = sentElsewhere(reader, message, error.details.sentAt, text.value === base ? '' : text.value);
    section.replaceWith(ended);
    ended.querySelector<HTMLElement>('h2')?.focus();
  }

  function handle(error: unknown) {
    if (error instanceof Replaced) return;
    if (isCode(error, 'reply_already_sent')) return alreadySent(error);
    if (isCode(error, 'draft_conflict')) {
      void resync().then((outcome) => {
        if (outcome === 'merged' && text.value !== base) void saveNow();
      });
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
    if (choosing) {
      alert.say(t.drafts.conflictExplain);
      return choosing.querySelector('button')?.focus();
    }
    if (!text.value.trim() && files.length === 0) {
      alert.say(t.reply.empty);
      return text.focus();
    }
    window.clearTimeout(saveTimer);
    void busy(send, t.reply.sending, async () => {
      try {
        await saving;
        // A save just met the other window's text: the choice comes before any send.
        if (choosing) return alert.say(t.drafts.conflictExplain);
        await change(() =>
          api.sendReply({ text: text.value, ...(copy.checked && reader.email ? { bcc: reader.email } : {}) }, version),
        );
        reader.go.sent(recipientText);
      } catch (error) {
        if (!isCode(error, 'draft_conflict')) return handle(error);
        // Not sent: what changed elsewhere is shown first (merged, or to choose), then sent again by hand.
        const outcome = await resync();
        if (outcome === 'merged') {
          if (text.value !== base) void saveNow();
          alert.say(t.drafts.checkAgain);
        }
      }
    });
  });

  return section;
}

/** A change queued by a form that a conflict has replaced since. */
class Replaced extends Error {}
