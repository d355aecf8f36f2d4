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
};
