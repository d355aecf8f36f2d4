import type { NotificationTexts } from './en.ts';

export const fr: NotificationTexts = {
  subject: (sender) => `Un message scellé de ${sender} vous attend`,
  greeting: 'Bonjour,',
  sent: (sender) =>
    `${sender} vous a envoyé un message scellé. ` +
    'Il est conservé chiffré et ne peut être lu qu’après votre connexion.',
  readHere: 'Lisez-le ici :',
  linkText: 'Lire le message scellé',
  howSms:
    'Pour l’ouvrir, connectez-vous avec un code à usage ' +
    'unique que nous envoyons par SMS à votre numéro de mobile.',
  howEmail: 'Pour l’ouvrir, connectez-vous avec un code à usage unique que nous envoyons à cette adresse e-mail.',
  ignore: 'Si vous n’attendiez pas de message de cet expéditeur, vous pouvez ignorer cet e-mail.',
  until: (when) => `Vous pouvez le lire jusqu’au ${when}.`,
  someone: 'Quelqu’un',
};
