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
};
