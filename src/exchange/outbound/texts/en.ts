/**
 * The words of the notification email in English. A translation is a copy of this file with the same
 * keys (de.ts, fr.ts, it.ts), listed in texts/index.ts; TypeScript refuses one with a key missing.
 */
export const en = {
  subject: (sender: string) => `A sealed message from ${sender} is waiting for you`,
  greeting: 'Hello,',
  sent: (sender: string) =>
    `${sender} has sent you a sealed message. It is stored encrypted and can only be read after you sign in.`,
  readHere: 'Read it here:',
  linkText: 'Read the sealed message',
  howSms: 'To open it, sign in with a one-time code that we send by SMS to your mobile number.',
  howEmail: 'To open it, sign in with a one-time code that we send to this email address.',
  ignore: 'If you did not expect a message from this sender, you can ignore this email.',
  until: (when: string) => `You can read it until ${when}.`,
  someone: 'someone',
};

export type NotificationTexts = typeof en;
