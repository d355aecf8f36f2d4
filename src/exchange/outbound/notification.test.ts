import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
import type { Language } from '../../kernel/languages.ts';
import { composeNotification, type Notification } from './notification.ts';

const notification = (extra: Partial<Notification> = {}): Notification => ({
  from: 'Sealpost <notify@sealpost.test>',
  to: 'bo@rcpt.example',
  sender: 'Alice <alice@sender.example>',
  link: 'http://auth.sealpost.test/m/7d0b6c1e-0000-4000-8000-000000000001?lang=en',
  method: 'email',
  sealedId: '7d0b6c1e-0000-4000-8000-000000000001',
  language: 'en',
  ...extra,
});

const read = async (composed: Buffer) => {
  const mail = await simpleParser(composed);
  return { text: mail.text ?? '', html: String(mail.html) };
};

describe('the notification email', () => {
  // 17:00 in Zürich is 16:00 UTC: the line names UTC, whatever zone the end date was given in.
  const expiresAt = new Date('2027-01-31T17:00:00+01:00');
  const lines: Record<Language, string> = {
    en: 'You can read it until January 31, 2027 at 4:00 PM UTC.',
    de: 'Sie können sie bis zum 31. Januar 2027 um 16:00 UTC lesen.',
    fr: 'Vous pouvez le lire jusqu’au 31 janvier 2027 à 16:00 UTC.',
    it: 'Potrà leggerlo fino al 31 gennaio 2027 alle ore 16:00 UTC.',
  };

  for (const [language, line] of Object.entries(lines) as Array<[Language, string]>) {
    it(`says until when the message can be read, in ${language}, in the text and the HTML part`, async () => {
      const { text, html } = await read(await composeNotification(notification({ language, expiresAt })));
      const link = notification().link;
      // Right below the link, a paragraph of its own.
      assert.ok(text.includes(`${link}\n\n${line}\n\n`), text);
      assert.ok(html.includes(`</a></p>\n<p>${line}</p>\n`), html);
    });
  }

  it('says nothing of an end when the seal answer has none', async () => {
    for (const language of Object.keys(lines) as Language[]) {
      const { text, html } = await read(await composeNotification(notification({ language })));
      assert.doesNotMatch(text, /UTC|2027/, language);
      assert.doesNotMatch(html, /UTC|2027/, language);
      const withEnd = await read(await composeNotification(notification({ language, expiresAt })));
      assert.equal(withEnd.text.replace(`${lines[language]}\n\n`, ''), text, 'only the line is added');
    }
  });

  it('elides the Italian article before 8 and 11: «all’8 agosto», «all’11 novembre»', async () => {
    const until = async (at: string) =>
      (await read(await composeNotification(notification({ language: 'it', expiresAt: new Date(at) })))).text;
    assert.match(await until('2027-08-08T09:30:00Z'), /Potrà leggerlo fino all’8 agosto 2027 alle ore 09:30 UTC\./);
    assert.match(await until('2027-11-11T12:00:00Z'), /Potrà leggerlo fino all’11 novembre 2027 alle ore 12:00 UTC\./);
    assert.match(await until('2027-11-18T12:00:00Z'), /Potrà leggerlo fino al 18 novembre 2027 alle ore 12:00 UTC\./);
  });
});
