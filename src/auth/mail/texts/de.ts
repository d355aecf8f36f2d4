import type { CodeMailTexts } from './en.ts';

export const de: CodeMailTexts = {
  subject: 'Ihr Sealpost-Code',
  body: (code, minutes) =>
    `${[
      `Ihr Sealpost-Code lautet ${code}`,
      '',
      `Geben Sie ihn auf der Seite ein, auf der Sie ihn angefordert haben. Er ist ${minutes} Minuten gültig.`,
      'Wenn Sie keinen Code angefordert haben, können Sie diese E-Mail ignorieren.',
    ].join('\r\n')}\r\n`,
  mobileChanged: {
    subject: 'Ihre Mobilnummer für eine versiegelte Nachricht wurde geändert',
    body: (sender: string, when: string, to: string) =>
      `${[
        `Die Mobilnummer für Ihre versiegelte Nachricht von ${sender} wurde am ${when} auf ${to} geändert.`,
        '',
        'Codes für diese Nachricht gehen ab jetzt an die neue Nummer.',
        'Falls Sie diese Änderung nicht vorgenommen haben, wenden Sie sich sofort an den Absender.',
      ].join('\r\n')}\r\n`,
    sms: (sender: string, when: string) =>
      `Sealpost: Die Mobilnummer für Ihre versiegelte Nachricht von ${sender} wurde ` +
      `am ${when} geändert. Falls Sie das nicht waren, wenden Sie sich an den Absender.`,
  },
  mobileAdded: {
    subject: 'Eine Mobilnummer schützt jetzt Ihre versiegelten Nachrichten',
    body: (when: string, to: string) =>
      `${[
        `Am ${when} wurde die Mobilnummer ${to} für Ihre versiegelten Nachrichten hinzugefügt.`,
        '',
        'Ab jetzt gehen die Codes für versiegelte Nachrichten dieser Organisation per SMS an diese Nummer.',
        'Die Nachricht, die Sie gerade gelesen haben, behält ihre Anmeldeart.',
        'Falls Sie diese Nummer nicht hinzugefügt haben, wenden Sie sich sofort an den Absender Ihrer Nachrichten.',
      ].join('\r\n')}\r\n`,
  },
  senderNotice: {
    openedSubject: (subject: string) => `Geöffnet: ${subject}`,
    opened: (recipient: string, subject: string, link: string) =>
      `${[
        `${recipient} hat Ihre versiegelte Nachricht «${subject}» geöffnet.`,
        '',
        'Wer sie gelesen und beantwortet hat, sehen und steuern Sie auf Ihrer Seite der gesendeten Nachrichten:',
        link,
      ].join('\r\n')}\r\n`,
    repliedSubject: (subject: string) => `Antwort gesendet: ${subject}`,
    replied: (recipient: string, subject: string, link: string) =>
      `${[
        `${recipient} hat auf Ihre versiegelte Nachricht «${subject}» geantwortet.`,
        'Die Antwort kommt per E-Mail zu Ihnen.',
        '',
        'Wer sie gelesen und beantwortet hat, sehen und steuern Sie auf Ihrer Seite der gesendeten Nachrichten:',
        link,
      ].join('\r\n')}\r\n`,
  },
};
