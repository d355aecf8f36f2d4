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
  mobileAdded: {
    subject: 'Un numéro de mobile protège désormais vos messages scellés',
    body: (when: string, to: string) =>
      `${[
        `Le ${when}, le numéro de mobile ${to} a été ajouté pour vos messages scellés.`,
        '',
        'Désormais, les codes des messages scellés de cette organisation arrivent par SMS à ce numéro.',
        'Le message que vous lisiez garde sa façon de se connecter.',
        'Si vous n’avez pas ajouté ce numéro, contactez sans attendre l’expéditeur de vos messages.',
      ].join('\r\n')}\r\n`,
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
