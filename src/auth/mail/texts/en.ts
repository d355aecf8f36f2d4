/**
 * The email that carries a sign-in code, in English. A translation is a copy of this file with the same
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
};

export type CodeMailTexts = typeof en;
