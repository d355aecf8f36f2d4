import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RuleCriteria } from '../tables.ts';
import { byRule, decide, domainMatches, headerFields, needsHeaders, type MatchableRule } from './criteria.ts';

let next = 0;
function rule(name: string, criteria: RuleCriteria | null, more: Partial<MatchableRule> = {}): MatchableRule {
  next += 1;
  return {
    id: `00000000-0000-4000-8000-${String(next).padStart(12, '0')}`,
    name,
    priority: next,
    channel: 'smtp',
    sender: null,
    outbound: ['smtp'],
    criteria,
    ...more,
  };
}

const head = (text: string) => headerFields(Buffer.from(text.replace(/\n/g, '\r\n'), 'utf8'));

function names(rules: MatchableRule[], facts: Parameters<typeof decide>[1]) {
  return decide(rules, facts).map((d) => d.rule?.name ?? `none (${d.misses.join('; ')})`);
}

describe('domains with `!` and subdomains', () => {
  it('a plain entry takes the domain and its subdomains, nothing else', () => {
    assert.equal(domainMatches(['org.example'], 'org.example'), true);
    assert.equal(domainMatches(['org.example'], 'mail.org.example'), true);
    assert.equal(domainMatches(['org.example'], 'notorg.example'), false);
    assert.equal(domainMatches(['org.example'], 'example'), false);
    assert.equal(domainMatches(['org.example'], undefined), false);
  });

  it('`!` takes every domain but the one named and its subdomains', () => {
    assert.equal(domainMatches(['!org.example'], 'example.com'), true);
    assert.equal(domainMatches(['!org.example'], 'org.example'), false);
    assert.equal(domainMatches(['!org.example'], 'hr.org.example'), false);
    assert.equal(domainMatches(['!org.example'], 'otherorg.example'), true);
    // The null sender has no domain: it is outside every named domain.
    assert.equal(domainMatches(['!org.example'], undefined), true);
  });

  it('plain and `!` entries together: one plain entry and no `!` entry', () => {
    const list = ['org.example', '!secret.org.example'];
    assert.equal(domainMatches(list, 'org.example'), true);
    assert.equal(domainMatches(list, 'a.secret.org.example'), false);
    assert.equal(domainMatches(list, 'example.com'), false);
  });

  it('recipients are compared with their domain lower-cased and IDN as punycode', () => {
    const rules = [rule('outside', { recipientDomains: ['!xn--bcher-kva.example'] }), rule('rest', null)];
    assert.deepEqual(
      names(rules, { channel: 'smtp', sender: 'a@x.example', recipients: ['Anna@BÜCHER.example', 'b@c.example'] }),
      ['rest', 'outside'],
    );
  });
});

describe('the subject, decoded from RFC 2047', () => {
  const tagged = [rule('tag', { subjectContains: '[secure]', stripSubjectTag: true }), rule('rest', null)];
  const facts = (subject: string) => ({
    channel: 'smtp' as const,
    sender: 'a@x.example',
    recipients: ['r@y.example'],
    headers: head(`From: a@x.example\nSubject: ${subject}\n`),
  });

  it('matches plain text case-insensitively', () => {
    assert.deepEqual(names(tagged, facts('[SECURE] the contract')), ['tag']);
    assert.deepEqual(names(tagged, facts('the contract')), ['rest']);
  });

  it('matches inside encoded words, B and Q, and across a folded line', () => {
    assert.deepEqual(names(tagged, facts('=?UTF-8?B?W3NlY3VyZV0gR3LDtsOfZQ==?=')), ['tag']);
    assert.deepEqual(names(tagged, facts('=?ISO-8859-1?Q?=5BSecure=5D_Gr=F6=DFe?=')), ['tag']);
    assert.deepEqual(names(tagged, facts('Contract\n [secure]')), ['tag']);
  });

  it('a message without a Subject matches no subject rule', () => {
    const facts = { channel: 'smtp' as const, sender: '', recipients: ['r@y.example'], headers: head('From: a@x\n') };
    assert.deepEqual(names(tagged, facts), ['rest']);
  });

  it('is read only when a rule asks for it', () => {
    assert.equal(needsHeaders(tagged), true);
    assert.equal(needsHeaders([rule('d', { recipientDomains: ['a.example'] }), rule('x', null)]), false);
  });
});

describe('a header', () => {
  const rules = [rule('header', { header: { name: 'X-Sealpost-Seal', value: 'yes' } }), rule('rest', null)];
  const facts = (headers: string) => ({
    channel: 'smtp' as const,
    sender: 'a@x.example',
    recipients: ['r@y.example'],
    headers: head(headers),
  });

  it('matches its name in any case and its exact value, unfolded and trimmed', () => {
    assert.deepEqual(names(rules, facts('x-sealpost-seal:   yes  \nSubject: s\n')), ['header']);
    assert.deepEqual(names(rules, facts('Subject: s\nX-Sealpost-Seal:\n yes\n')), ['header']);
    assert.deepEqual(names(rules, facts('Subject: s\nX-Other: 1\nX-Sealpost-Seal: no\nX-Sealpost-Seal: yes\n')), [
      'header',
    ]);
  });

  it('does not match another value, or a value in another case', () => {
    assert.deepEqual(names(rules, facts('X-Sealpost-Seal: yes please\n')), ['rest']);
    assert.deepEqual(names(rules, facts('X-Sealpost-Seal: YES\n')), ['rest']);
    assert.deepEqual(names(rules, facts('Subject: s\n')), ['rest']);
  });
});

describe('order, channel, sender and per-recipient decisions', () => {
  it('the first rule in the given order that applies takes each recipient; all criteria are required', () => {
    const rules = [
      rule('both', { recipientDomains: ['!org.example'], senderDomains: ['org.example'] }),
      rule('outside', { recipientDomains: ['!org.example'] }, { outbound: ['seal'] }),
      rule('rest', null),
    ];
    const decisions = decide(rules, {
      channel: 'smtp',
      sender: 'boss@hq.org.example',
      recipients: ['colleague@org.example', 'customer@example.com', 'other@example.net'],
    });
    assert.deepEqual(
      decisions.map((d) => d.rule?.name),
      ['rest', 'both', 'both'],
    );
    assert.deepEqual(
      byRule(decisions).map((g) => [g.rule.name, g.recipients]),
      [
        ['rest', ['colleague@org.example']],
        ['both', ['customer@example.com', 'other@example.net']],
      ],
    );
    assert.deepEqual(names(rules, { channel: 'smtp', sender: 'x@elsewhere.example', recipients: ['c@example.com'] }), [
      'outside',
    ]);
  });

  it('channel and sender count as before; rules of another channel or sender never apply', () => {
    const rules = [
      rule('json', null, { channel: 'json' }),
      rule('bob', null, { sender: 'Bob@x.example' }),
      rule('outside', { recipientDomains: ['!org.example'] }),
    ];
    assert.deepEqual(names(rules, { channel: 'smtp', sender: 'bob@X.example', recipients: ['a@org.example'] }), [
      'bob',
    ]);
    const [none] = decide(rules, { channel: 'smtp', sender: 'eve@x.example', recipients: ['a@org.example'] });
    assert.equal(none?.rule, undefined);
    assert.deepEqual(none?.misses, [
      'rule "json": channel is json',
      'rule "bob": sender is not Bob@x.example',
      'rule "outside": recipient domain is not !org.example',
    ]);
  });
});
