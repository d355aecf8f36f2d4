import { type Language, languageOfTag } from '../../kernel/languages.ts';

/** The words of the two sign-out pages: the server sends them itself, so they live here, not in the page's texts. */
const TEXTS: Record<Language, SignOutTexts> = {
  en: {
    confirmTitle: 'Sign out of Sealpost?',
    confirmBody:
      'Another website sent you here. You are still signed in: press the button only if you want to sign out.',
    confirmButton: 'Sign out',
    signedOutTitle: 'You are signed out',
    signedOutBody: 'Your session on this device has ended. To read the message again, sign in with a new code.',
    backToMessage: 'Back to your message',
  },
  de: {
    confirmTitle: 'Von Sealpost abmelden?',
    confirmBody:
      'Eine andere Website hat Sie hierher geschickt. Sie sind noch angemeldet: ' +
      'Drücken Sie die Schaltfläche nur, wenn Sie sich abmelden möchten.',
    confirmButton: 'Abmelden',
    signedOutTitle: 'Sie sind abgemeldet',
    signedOutBody:
      'Ihre Sitzung auf diesem Gerät ist beendet. Um die Nachricht wieder zu lesen, melden Sie sich mit einem neuen ' +
      'Code an.',
    backToMessage: 'Zurück zu Ihrer Nachricht',
  },
  fr: {
    confirmTitle: 'Se déconnecter de Sealpost ?',
    confirmBody:
      'Un autre site vous a envoyé ici. Vous êtes toujours connecté : ' +
      'appuyez sur le bouton seulement si vous voulez vous déconnecter.',
    confirmButton: 'Se déconnecter',
    signedOutTitle: 'Vous êtes déconnecté',
    signedOutBody:
      'Votre session sur cet appareil est terminée. Pour relire le message, connectez-vous avec un nouveau code.',
    backToMessage: 'Retour à votre message',
  },
  it: {
    confirmTitle: 'Disconnettersi da Sealpost?',
    confirmBody: "Un altro sito l'ha mandata qui. È ancora connesso: prema il pulsante solo se vuole disconnettersi.",
    confirmButton: 'Disconnettersi',
    signedOutTitle: 'Si è disconnesso',
    signedOutBody:
      'La sua sessione su questo dispositivo è terminata. ' +
      'Per leggere di nuovo il messaggio, acceda con un nuovo codice.',
    backToMessage: 'Torna al suo messaggio',
  },
};

interface SignOutTexts {
  confirmTitle: string;
  confirmBody: string;
  confirmButton: string;
  signedOutTitle: string;
  signedOutBody: string;
  backToMessage: string;
}

/** The form field that carries the CSRF token: a plain HTML form cannot send the X-CSRF-Token header. */
export const CSRF_FIELD = 'csrf';

/**
 * The first language of Accept-Language that Sealpost writes in, by weight (RFC 9110 §12.5.4), else English:
 * these pages come without script, so the browser's choice is the only one there is.
 */
export function pageLanguage(acceptLanguage: string | undefined): Language {
  const ranked = (acceptLanguage ?? '')
    .split(',')
    .map((entry, index) => {
      const [tag = '', ...parameters] = entry.split(';');
      const q = parameters.map((p) => /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/.exec(p)?.[1]).find(Boolean);
      return { language: languageOfTag(tag), weight: q === undefined ? 1 : Number(q), index };
    })
    .filter((entry) => entry.language !== undefined && entry.weight > 0)
    .sort((a, b) => b.weight - a.weight || a.index - b.index);
  return ranked[0]?.language ?? 'en';
}

/**
 * GET /logout reached from another site: nothing is ended yet. One button posts the session's CSRF token back
 * to POST /logout from our own origin, so that a link or an auto-navigation elsewhere cannot sign anyone out.
 */
export function confirmSignOutPage(language: Language, csrfToken: string, messageId: string | undefined): string {
  const t = TEXTS[language];
  return page(language, t.confirmTitle, [
    `<p>${t.confirmBody}</p>`,
    '<form method="post" action="/logout">',
    `<input type="hidden" name="${CSRF_FIELD}" value="${escapeHtml(csrfToken)}">`,
    `<button type="submit">${t.confirmButton}</button>`,
    '</form>',
    backLink(t, messageId),
  ]);
}

/** A person who signed out sees a sentence, not the JSON the reader page's fetch gets. */
export function signedOutPage(language: Language, messageId: string | undefined): string {
  const t = TEXTS[language];
  return page(language, t.signedOutTitle, [`<p>${t.signedOutBody}</p>`, backLink(t, messageId)]);
}

function backLink(t: SignOutTexts, messageId: string | undefined): string {
  return messageId ? `<p><a href="/m/${encodeURIComponent(messageId)}">${t.backToMessage}</a></p>` : '';
}

/** Shaped like the auth service's other server pages (reader/routes.ts): no script, no style, a <main> landmark. */
function page(language: Language, heading: string, body: string[]): string {
  return [
    '<!doctype html>',
    `<html lang="${language}"><head><meta charset="utf-8">` +
      '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta name="robots" content="noindex, nofollow"><title>${heading} – Sealpost</title><link ` +
      'rel="icon" href="/favicon.svg" type="image/svg+xml"></head><body>',
    `<main><h1>${heading}</h1>`,
    ...body.filter(Boolean),
    '</main>',
    '</body></html>',
  ].join('\n');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
