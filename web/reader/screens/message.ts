import type { Address, MessagePage, SealedMessage } from '../api.ts';
import { alertBox, isSessionGone, type Reader, type Screen } from '../app.ts';
import { append, h } from '../dom.ts';
import { formatBytes, formatDate } from '../format.ts';
import { messageFrame } from './message-frame.ts';
import { messageList } from './message-list.ts';
import { laterMobileSection, mobileSection } from './mobile.ts';
import { busy, signOutControl, signOutEverywhereControl } from './parts.ts';
import { loadDraft, replySection, type DraftOutcome } from './reply.ts';
import { brokenSealScreen, fatalScreen, loadingScreen, messageEnd } from './status.ts';
import { isCode, isEnded } from '../errors.ts';

/**
 * Loads the message and the draft reply, then shows them; back to sign-in when the session is gone. A
 * draft that fails to load does not stop the reading: the reply form waits for it (reply.ts).
 */
export async function messageScreen(reader: Reader): Promise<void> {
  reader.show(loadingScreen(reader));
  try {
    // The list of the reader's other messages is a help, never a reason not to show this one.
    const [message, draft, others] = await Promise.all([
      reader.api.message(),
      loadDraft(reader),
      reader.api.messages().catch((): MessagePage => ({ messages: [] })),
    ]);
    if ('error' in draft && (isSessionGone(draft.error) || isEnded(draft.error))) throw draft.error;
    reader.show(readScreen(reader, message, draft, others));
  } catch (error) {
    if (isSessionGone(error)) {
      reader.notice = reader.t.sessionEnded;
      reader.go.signIn();
      return;
    }
    // Final: the content does not match its seal. Never "try again", and nothing of the content.
    if (isCode(error, 'seal_broken')) return reader.show(brokenSealScreen(reader, error));
    // Final too: the message ended (expired, withdrawn) and its content is gone.
    if (isEnded(error)) return reader.go.ended(messageEnd(error), true);
    reader.show(fatalScreen(reader, error));
  }
}

export function readScreen(
  reader: Reader,
  message: SealedMessage,
  draft: DraftOutcome,
  others: MessagePage = { messages: [] },
): Screen {
  const { t } = reader;
  const subject = message.subject || t.message.noSubject;
  return {
    name: 'message',
    title: subject,
    render() {
      const signOut = signOutControl(reader, 'secondary small');
      const everywhere = signOutEverywhereControl(reader, 'secondary small');

      const headers = h('dl', { class: 'headers' });
      const row = (label: string, value: string | Node | null) => {
        if (value) headers.append(h('div', {}, h('dt', {}, label), h('dd', {}, value)));
      };
      row(t.message.from, addressList(message.from));
      row(t.message.to, addressList(message.to));
      row(t.message.cc, addressList(message.cc));
      if (message.replyTo.length > 0 && addresses(message.replyTo) !== addresses(message.from))
        row(t.message.replyTo, addressList(message.replyTo));
      if (message.date) row(t.message.date, formatDate(message.date, t.lang));

      const seal = message.seal.verified
        ? h(
            'section',
            { class: 'seal', 'aria-label': t.message.sealTitle },
            h('span', { class: 'seal-mark', 'aria-hidden': 'true' }, '✓'),
            h(
              'div',
              {},
              sealLine(
                t.message.sealedOn(formatDate(message.seal.sealedAt, t.lang), message.seal.cid),
                message.seal.cid,
              ),
              h('p', { class: 'hint' }, t.message.sealExplain),
            ),
          )
        : null;

      // Pictures the HTML shows are in the frame already; every other part, inline or not, is a file.
      const files = message.attachments.filter((attachment) => !attachment.embedded);
      const attachments =
        files.length > 0
          ? h(
              'section',
              { class: 'attachments', 'aria-labelledby': 'attachments-title' },
              h('h2', { id: 'attachments-title' }, t.message.attachments),
              h(
                'ul',
                {},
                ...files.map((a) =>
                  h(
                    'li',
                    {},
                    // Named by what it shows (WCAG 2.5.3: a voice user says what they see), "Download" first.
                    h(
                      'a',
                      { href: reader.api.attachmentUrl(a.index), download: a.filename },
                      h('span', { class: 'visually-hidden' }, `${t.message.download} `),
                      h('span', { class: 'file-name' }, a.filename),
                      h('span', { class: 'file-size' }, formatBytes(t, a.size)),
                    ),
                  ),
                ),
              ),
            )
          : null;

      return h(
        'div',
        { class: 'reading' },
        h('div', { class: 'toolbar' }, signOut.button, everywhere.button),
        signOut.alert,
        everywhere.alert,
        h(
          'article',
          { class: 'card message', 'aria-labelledby': 'message-subject' },
          // dir=auto: a subject in a right-to-left script is laid out as one, apart from the page around it.
          h('h1', { id: 'message-subject', dir: 'auto' }, subject),
          headers,
          seal,
          messageBody(reader, message),
          attachments,
        ),
        replySection(reader, message, draft),
        messageList(reader, others),
        // Last on the page: its sentences, appearing under its form, move nothing below them.
        mobileSection(reader),
        laterMobileSection(reader),
      );
    },
  };
}

/** Text in a plain block; HTML in a sandboxed frame, with "show images" when the sender's had some. */
function messageBody(reader: Reader, message: SealedMessage): HTMLElement {
  const { t } = reader;
  if (message.html) {
    const container = h('div', { class: 'body' });
    const alert = alertBox();
    const render = (html: string, remoteImages: boolean) =>
      container.replaceChildren(messageFrame(html, { title: t.message.bodyFrame, remoteImages }));
    render(message.html, false);
    const blocked = message.remoteImages ?? 0;
    if (blocked === 0) return container;
    const button = h('button', { type: 'button', class: 'secondary small' }, t.message.showImages);
    const bar = h(
      'div',
      { class: 'images-bar' },
      h('p', {}, t.message.remoteImagesBlocked(blocked)),
      button,
      alert.element,
    );
    button.addEventListener('click', () => {
      void busy(button, t.loading, async () => {
        try {
          const withImages = await reader.api.message({ remoteImages: true });
          render(withImages.html ?? '', true);
          bar.remove();
        } catch (error) {
          if (isEnded(error)) return reader.go.ended(messageEnd(error), true);
          alert.show(t, error);
        }
      });
    });
    return h('div', {}, bar, container);
  }
  if (message.text) return h('div', { class: 'body body-text' }, message.text);
  return h('p', { class: 'body hint' }, t.message.noBody);
}

/** The translated sentence, with the CID in it set as code (it is long and breaks anywhere). */
function sealLine(sentence: string, cid: string): HTMLElement {
  const at = sentence.indexOf(cid);
  if (at < 0) return h('p', { class: 'seal-line' }, sentence);
  return h(
    'p',
    { class: 'seal-line' },
    sentence.slice(0, at),
    h('code', { class: 'cid' }, cid),
    sentence.slice(at + cid.length),
  );
}

/**
 * The addresses of a header, each name and address isolated (<bdi>): a right-to-left name, or one the server
 * could not clean, cannot carry the address or the next entry along in its direction.
 */
function addressList(list: Address[]): HTMLElement | null {
  if (list.length === 0) return null;
  const shown = h('span', {});
  list.forEach((a, index) => {
    if (index > 0) append(shown, ', ');
    if (a.name && a.name !== a.address) append(shown, h('bdi', {}, a.name), ' <', h('bdi', {}, a.address), '>');
    else append(shown, h('bdi', {}, a.address));
  });
  return shown;
}

function addresses(list: Address[]): string {
  return list.map((a) => (a.name && a.name !== a.address ? `${a.name} <${a.address}>` : a.address)).join(', ');
}
