import type { NotificationTexts } from './en.ts';

export const it: NotificationTexts = {
  subject: (sender) => `Un messaggio sigillato di ${sender} la sta aspettando`,
  greeting: 'Buongiorno,',
  sent: (sender) =>
    `${sender} le ha inviato un messaggio sigillato. È conservato cifrato e può essere letto solo dopo l’accesso.`,
  readHere: 'Lo legga qui:',
  linkText: 'Leggi il messaggio sigillato',
  howSms: 'Per aprirlo, acceda con un codice monouso che inviamo via SMS al suo numero di cellulare.',
  howEmail: 'Per aprirlo, acceda con un codice monouso che inviamo a questo indirizzo e-mail.',
  ignore: 'Se non si aspettava un messaggio da questo mittente, può ignorare questa e-mail.',
  // «all’8 agosto», «all’11 novembre»: the article elides before a vowel sound.
  until: (when) => `Potrà leggerlo fino ${/^(8|11)\b/.test(when) ? 'all’' : 'al '}${when}.`,
  someone: 'Qualcuno',
};
