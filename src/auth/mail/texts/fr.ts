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
};
