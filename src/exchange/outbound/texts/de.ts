import type { NotificationTexts } from './en.ts';

export const de: NotificationTexts = {
  subject: (sender) => `Eine versiegelte Nachricht von ${sender} wartet auf Sie`,
  greeting: 'Guten Tag,',
  sent: (sender) =>
    `${sender} hat Ihnen eine versiegelte Nachricht gesendet. Sie ist verschlüsselt ` +
    'gespeichert und kann erst gelesen werden, nachdem Sie sich angemeldet haben.',
  readHere: 'Hier lesen:',
  linkText: 'Versiegelte Nachricht lesen',
  howSms: 'Zum Öffnen melden Sie sich mit einem Einmalcode an, den wir Ihnen per SMS an Ihre Mobilnummer senden.',
  howEmail: 'Zum Öffnen melden Sie sich mit einem Einmalcode an, den wir an diese E-Mail-Adresse senden.',
  ignore: 'Wenn Sie keine Nachricht von diesem Absender erwarten, können Sie diese E-Mail ignorieren.',
  until: (when) => `Sie können sie bis zum ${when} lesen.`,
  someone: 'Jemand',
};
