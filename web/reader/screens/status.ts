import type { MessageEnd } from '../api.ts';
import type { ApiError } from '../api-error.ts';
import type { Reader, Screen } from '../app.ts';
import { signOutControl } from './parts.ts';
import { h } from '../dom.ts';
import { errorReference, errorText, isCode } from '../errors.ts';
import { formatDate } from '../format.ts';

export function loadingScreen(reader: Pick<Reader, 't'>): Screen {
  return {
    name: 'loading',
    title: reader.t.loading,
    render: () =>
      h('section', { class: 'card narrow', 'aria-busy': 'true' }, h('h1', { class: 'quiet' }, reader.t.loading)),
  };
}

/**
 * Nothing else can be done on this page (unknown message, service down): say why, and offer a retry where one can
 * help. A message that does not exist (not_found), or a link that is not complete, is final: no retry.
 */
export function fatalScreen(reader: Pick<Reader, 't'>, error: unknown, text?: string): Screen {
  const { t } = reader;
  const final = text !== undefined || isCode(error, 'not_found');
  return {
    name: 'fatal',
    title: t.fatal.title,
    render() {
      const retry = final ? null : h('button', { type: 'button', class: 'primary' }, t.fatal.retry);
      retry?.addEventListener('click', () => window.location.reload());
      const reference = errorReference(t, error);
      return h(
        'section',
        { class: 'card narrow' },
        h('h1', {}, t.fatal.title),
        h(
          'div',
          { class: 'alert', role: 'alert' },
          h('p', {}, text ?? errorText(t, error)),
          reference ? h('p', { class: 'reference' }, reference) : null,
        ),
        retry,
      );
    },
  };
}

/**
 * The content failed verification against its seal (seal_broken): a final state in red, with the CID of
 * the sealed content and the error's reference, and no "try again" (trying again cannot mend a seal).
 */
export function brokenSealScreen(reader: Reader, error: ApiError): Screen {
  const { t } = reader;
  return {
    name: 'seal-broken',
    title: t.brokenSeal.title,
    render() {
      const signOut = signOutControl(reader, 'secondary small');
      const cid = error.details.cid;
      // Every copy that was tried, and why none served: the sender's operator can tell a damaged disk from a
      // cluster that was down.
      const copies = error.details.copies ?? [];
      return h(
        'section',
        { class: 'card narrow seal-broken' },
        h(
          'div',
          { class: 'seal-broken-head' },
          h('span', { class: 'seal-broken-mark', 'aria-hidden': 'true' }, '✕'),
          h('h1', {}, t.brokenSeal.title),
        ),
        h(
          'div',
          { class: 'alert', role: 'alert' },
          h('p', {}, t.brokenSeal.body),
          cid ? h('p', { class: 'seal-broken-cid' }, ...cidLine(t.brokenSeal.cid(cid), cid)) : null,
          copies.length > 0
            ? h(
                'ul',
                { class: 'seal-broken-copies' },
                ...copies.map((copy) =>
                  h('li', {}, t.brokenSeal.copy(copy.cluster, t.brokenSeal.copyStates[copy.state])),
                ),
              )
            : null,
        ),
        h('p', {}, t.brokenSeal.advice),
        error.errorId ? h('p', { class: 'reference' }, t.errorFallback.reference(error.errorId)) : null,
        h('div', { class: 'toolbar' }, signOut.button),
        signOut.alert,
      );
    },
  };
}

/** How a 410 of the service (message_expired, message_withdrawn) says the message ended. */
export function messageEnd(error: ApiError): MessageEnd {
  return {
    reason: error.errorCode === 'message_expired' ? 'expired' : 'withdrawn',
    ...(error.details.endedAt ? { at: error.details.endedAt } : {}),
    ...(error.details.contact ? { contact: error.details.contact } : {}),
  };
}

/**
 * The message ended, expired or withdrawn (docs/specification.md#end-dates): a final state that says when, in the
 * reader's language, and whom to ask (the sender, as a mail link). No "try again", no form: its content is gone.
 * The sign-out stays for a reader who is signed in.
 */
export function endedScreen(reader: Reader, end: MessageEnd, signedIn: boolean): Screen {
  const { t } = reader;
  const expired = end.reason === 'expired';
  const title = expired ? t.ended.expiredTitle : t.ended.withdrawnTitle;
  return {
    name: expired ? 'message-expired' : 'message-withdrawn',
    title,
    render() {
      const signOut = signedIn ? signOutControl(reader, 'secondary small') : undefined;
      const date = end.at ? formatDate(end.at, t.lang) : undefined;
      const when = date
        ? expired
          ? t.ended.expiredOn(date)
          : t.ended.withdrawnOn(date)
        : t.errors[expired ? 'message_expired' : 'message_withdrawn'];
      const ask = end.contact
        ? h('p', {}, ...linked(t.ended.ask(end.contact), end.contact, `mailto:${end.contact}`))
        : h('p', {}, t.ended.askSender);
      return h(
        'section',
        { class: 'card narrow message-ended' },
        h(
          'div',
          { class: 'message-ended-head' },
          h('span', { class: 'message-ended-mark', 'aria-hidden': 'true' }, '⊘'),
          h('h1', {}, title),
        ),
        h('p', { class: 'message-ended-when' }, when),
        h('p', {}, t.ended.gone),
        ask,
        signOut ? h('div', { class: 'toolbar' }, signOut.button) : null,
        signOut?.alert,
      );
    },
  };
}

/** The sentence with `part` in it as a link to `href`. */
function linked(sentence: string, part: string, href: string): Array<string | HTMLElement> {
  const at = sentence.indexOf(part);
  if (at < 0) return [sentence];
  return [sentence.slice(0, at), h('a', { href }, part), sentence.slice(at + part.length)];
}

/** The sentence with the CID in it set as code. */
function cidLine(sentence: string, cid: string): Array<string | HTMLElement> {
  const at = sentence.indexOf(cid);
  if (at < 0) return [sentence];
  return [sentence.slice(0, at), h('code', { class: 'cid' }, cid), sentence.slice(at + cid.length)];
}
