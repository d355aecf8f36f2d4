/**
 * What the auth service writes, in English: the email that carries a sign-in code (to a recipient, or to a sender
 * for the sender's page), the notices of a mobile change (email and SMS), and a sender's notice of a recipient's
 * first opening or reply (NOTIFY_SENDER_ON). A translation is a copy of this file with the same
 * keys (de.ts, fr.ts, it.ts), listed in texts/index.ts; TypeScript refuses one with a key missing.
 */
export const en = {
  subject: 'Your Sealpost code',
  body: (code: string, minutes: number) =>
    `${[
      `Your Sealpost code is ${code}`,
      '',
      `Enter it on the page where you asked for it. It is valid for ${minutes} minutes.`,
      'If you did not ask for a code, you can ignore this email.',
    ].join('\r\n')}\r\n`,
  mobileChanged: {
    subject: 'Your mobile number for a sealed message was changed',
    body: (sender: string, when: string, to: string) =>
      `${[
        `The mobile number for your sealed message from ${sender} was changed on ${when}, to ${to}.`,
        '',
        'Codes for this message now go to the new number.',
        'If you did not make this change, contact the sender at once.',
      ].join('\r\n')}\r\n`,
    sms: (sender: string, when: string) =>
      `Sealpost: the mobile number for your sealed message from ${sender} ` +
      `was changed on ${when}. If this was not you, contact the sender.`,
  },
  mobileAdded: {
    subject: 'A mobile number now protects your sealed messages',
    body: (when: string, to: string) =>
      `${[
        `On ${when} the mobile number ${to} was added for your sealed messages.`,
        '',
        'From now on, the codes for the sealed messages you receive from this organisation go to that number by SMS.',
        'The message you were reading keeps its way of signing in.',
        'If you did not add this number, contact the sender of your messages at once.',
      ].join('\r\n')}\r\n`,
  },
  senderNotice: {
    openedSubject: (subject: string) => `Opened: ${subject}`,
    opened: (recipient: string, subject: string, link: string) =>
      `${[
        `${recipient} has opened your sealed message "${subject}".`,
        '',
        `See who read and answered it, and steer it, on your page of sent messages: ${link}`,
      ].join('\r\n')}\r\n`,
    repliedSubject: (subject: string) => `Reply sent: ${subject}`,
    replied: (recipient: string, subject: string, link: string) =>
      `${[
        `${recipient} has replied to your sealed message "${subject}". The reply comes to you by email.`,
        '',
        `See who read and answered it, and steer it, on your page of sent messages: ${link}`,
      ].join('\r\n')}\r\n`,
  },
};

export type CodeMailTexts = typeof en;
