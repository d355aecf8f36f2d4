import type { CodeMailTexts } from './en.ts';

export const fr: CodeMailTexts = {
  subject: 'Votre code Sealpost',
  body: (code, minutes) =>
    `${[
      `Votre code Sealpost est ${code}`,
      '',
      `Saisissez-le sur la page où vous l’avez demandé. Il est valable ${minutes} minutes.`,
      'Si vous n’avez pas demandé de code, vous pouvez ignorer cet e-mail.',
    ].join('\r\n')}\r\n`,
  mobileChanged: {
    subject: 'Votre numéro de mobile pour un message scellé a été modifié',
    body: (sender: string, when: string, to: string) =>
      `${[
        `Le numéro de mobile de votre message scellé de ${sender} a été remplacé le ${when} par ${to}.`,
        '',
        'Les codes pour ce message sont désormais envoyés au nouveau numéro.',
        "Si vous n'êtes pas à l'origine de ce changement, contactez immédiatement l'expéditeur.",
      ].join('\r\n')}\r\n`,
    sms: (sender: string, when: string) =>
      `Sealpost : le numéro de mobile de votre message scellé de ${sender} a ` +
      `été modifié le ${when}. Si ce n'était pas vous, contactez l'expéditeur.`,
  },
  senderNotice: {
    openedSubject: (subject: string) => `Ouvert : ${subject}`,
    opened: (recipient: string, subject: string, link: string) =>
      `${[
        `${recipient} a ouvert votre message scellé « ${subject} ».`,
        '',
        `Voyez qui l'a lu et y a répondu, et gérez-le, sur votre page des messages envoyés : ${link}`,
      ].join('\r\n')}\r\n`,
    repliedSubject: (subject: string) => `Réponse envoyée : ${subject}`,
    replied: (recipient: string, subject: string, link: string) =>
      `${[
        `${recipient} a répondu à votre message scellé « ${subject} ». La réponse vous parvient par e-mail.`,
        '',
        `Voyez qui l'a lu et y a répondu, et gérez-le, sur votre page des messages envoyés : ${link}`,
      ].join('\r\n')}\r\n`,
  },
};
