import type { CodeMailTexts } from './en.ts';

export const it: CodeMailTexts = {
  subject: 'Il suo codice Sealpost',
  body: (code, minutes) =>
    `${[
      `Il suo codice Sealpost è ${code}`,
      '',
      `Lo inserisca nella pagina in cui lo ha richiesto. È valido per ${minutes} minuti.`,
      'Se non ha richiesto un codice, può ignorare questa e-mail.',
    ].join('\r\n')}\r\n`,
  mobileChanged: {
    subject: 'Il suo numero di cellulare per un messaggio sigillato è stato modificato',
    body: (sender: string, when: string, to: string) =>
      `${[
        `Il numero di cellulare per il suo messaggio sigillato da ${sender} è stato cambiato il ${when} in ${to}.`,
        '',
        "D'ora in poi i codici per questo messaggio vanno al nuovo numero.",
        'Se non ha effettuato lei questa modifica, contatti subito il mittente.',
      ].join('\r\n')}\r\n`,
    sms: (sender: string, when: string) =>
      `Sealpost: il numero di cellulare per il suo messaggio sigillato da ${sender} ` +
      `è stato cambiato il ${when}. Se non è stato lei, contatti il mittente.`,
  },
  mobileAdded: {
    subject: 'Un numero di cellulare protegge ora i suoi messaggi sigillati',
    body: (when: string, to: string) =>
      `${[
        `Il ${when} è stato aggiunto il numero di cellulare ${to} per i suoi messaggi sigillati.`,
        '',
        'D’ora in poi i codici dei messaggi sigillati di questa organizzazione arrivano via SMS a quel numero.',
        'Il messaggio che stava leggendo mantiene il suo modo di accesso.',
        'Se non ha aggiunto lei questo numero, contatti subito il mittente dei suoi messaggi.',
      ].join('\r\n')}\r\n`,
  },
  senderNotice: {
    openedSubject: (subject: string) => `Aperto: ${subject}`,
    opened: (recipient: string, subject: string, link: string) =>
      `${[
        `${recipient} ha aperto il suo messaggio sigillato «${subject}».`,
        '',
        `Veda chi l'ha letto e vi ha risposto, e lo gestisca, nella sua pagina dei messaggi inviati: ${link}`,
      ].join('\r\n')}\r\n`,
    repliedSubject: (subject: string) => `Risposta inviata: ${subject}`,
    replied: (recipient: string, subject: string, link: string) =>
      `${[
        `${recipient} ha risposto al suo messaggio sigillato «${subject}». La risposta le arriva per e-mail.`,
        '',
        `Veda chi l'ha letto e vi ha risposto, e lo gestisca, nella sua pagina dei messaggi inviati: ${link}`,
      ].join('\r\n')}\r\n`,
  },
};
