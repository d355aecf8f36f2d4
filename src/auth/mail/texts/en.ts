/**
 * What the auth service writes to recipients, in English: the email that carries a sign-in code, and the
 * notices of a mobile change (email and SMS). A translation is a copy of this file with the same
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
};

export type CodeMailTexts = typeof en;
