import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { headerFields } from '../rules/criteria.ts';
import { messageWithHead, streamWithHead } from './head-rewrite.ts';
import { headWithoutSubjectTag, outgoingHead } from './subject-tag.ts';

const crlf = (text: string) => Buffer.from(text.replace(/\n/g, '\r\n'), 'utf8');
const strip = (head: string, tag = '[secure]') => headWithoutSubjectTag(crlf(head), tag).toString('utf8');

describe('stripping the subject tag on the way out', () => {
  it('removes the tag in any case and the white space it leaves, nothing else', () => {
    assert.equal(
      strip('From: a@x\nSubject: [SECURE] The contract\nTo: b@y\n'),
      'From: a@x\r\nSubject: The contract\r\nTo: b@y\r\n',
    );
    assert.equal(strip('Subject: The [secure] contract\n'), 'Subject: The contract\r\n');
    assert.equal(strip('Subject:\n The contract [secure]\n'), 'Subject: The contract\r\n');
  });

  it('decodes encoded words and writes a non-ASCII subject as UTF-8 encoded words', () => {
    const out = strip('Subject: =?UTF-8?B?W3NlY3VyZV0gR3LDtsOfZQ==?=\nTo: b@y\n');
    assert.match(out, /^Subject: =\?UTF-8\?B\?[^\r\n]+\?=\r\nTo: b@y\r\n$/);
    assert.equal(headerFields(Buffer.from(out)).subject, 'Größe');
  });

  it('leaves a header block without the tag, or without a Subject, as it was', () => {
    const head = crlf('Subject: The contract\n');
    assert.equal(headWithoutSubjectTag(head, '[secure]'), head);
    const none = crlf('From: a@x\n');
    assert.equal(headWithoutSubjectTag(none, '[secure]'), none);
  });

  it('rewrites the head only, in a message held whole and in a stream, Bcc removed too', async () => {
    const message = crlf('Subject: [secure] Hi\nBcc: hidden@z\nTo: b@y\n\nbody [secure] stays\n');
    const expected = 'Subject: Hi\r\nTo: b@y\r\n\r\nbody [secure] stays\r\n';
    assert.equal(messageWithHead(message, outgoingHead('[secure]')).toString(), expected);
    const chunks = [message.subarray(0, 7), message.subarray(7, 30), message.subarray(30)];
    const streamed: Buffer[] = [];
    for await (const chunk of streamWithHead(Readable.from(chunks), outgoingHead('[secure]'))) streamed.push(chunk);
    assert.equal(Buffer.concat(streamed).toString(), expected);
    // Without a tag to strip, only Bcc goes.
    assert.equal(
      messageWithHead(message, outgoingHead(null)).toString(),
      expected.replace('Subject: Hi', 'Subject: [secure] Hi'),
    );
  });
});
