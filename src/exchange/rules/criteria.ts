import { domainToASCII } from 'node:url';
import libmime from 'libmime';
import type { Channel, Rule, RuleCriteria } from '../tables.ts';
import { senderKey } from './match.ts';

/**
 * How a message's recipients find their rules when a rule has criteria beyond channel and sender
 * (recipient and sender domains, a subject text, a header): in JavaScript, per recipient, from the rules in
 * execution order. The intake (accept.ts) and the dry run (POST /v1/config/match) both decide here, so
 * they never disagree. A rule without criteria matches as rules/match.ts does in SQL.
 */

/** What the rules look at: the envelope, and the header block once a rule needs it. */
export interface MessageFacts {
  channel: Channel;
  /** Envelope sender; '' for the null sender <>. */
  sender: string;
  recipients: string[];
  /** Undefined when no rule of the candidates asks for the subject or a header (the fast path never reads it). */
  headers?: HeaderFields;
}

/** A rule as the matcher needs it. */
export type MatchableRule = Pick<Rule, 'id' | 'name' | 'priority' | 'channel' | 'sender' | 'outbound' | 'criteria'>;

/** One recipient's decision: its rule, or why none applies (each rule's first criterion that failed). */
export interface RecipientDecision<R extends MatchableRule = MatchableRule> {
  recipient: string;
  rule?: R;
  misses: string[];
}

/** Whether any of these rules reads the header block (subject or a header): only then is it parsed. */
export function needsHeaders(rules: readonly MatchableRule[]): boolean {
  return rules.some((rule) => rule.criteria?.subjectContains !== undefined || rule.criteria?.header !== undefined);
}

/** Every recipient's rule: the first in `rules` (execution order) that applies to it. */
export function decide<R extends MatchableRule>(rules: readonly R[], facts: MessageFacts): RecipientDecision<R>[] {
  const key = senderKey(facts.sender);
  return facts.recipients.map((recipient) => {
    const misses: string[] = [];
    for (const rule of rules) {
      const miss = missOf(rule, facts, key, recipient);
      if (miss === undefined) return { recipient, rule, misses };
      misses.push(`rule "${rule.name}": ${miss}`);
    }
    return { recipient, misses };
  });
}

/** Recipients grouped by their rule, groups in the order of their first recipient. */
export function byRule<R extends MatchableRule>(
  decisions: readonly RecipientDecision<R>[],
): Array<{ rule: R; recipients: string[] }> {
  const groups = new Map<string, { rule: R; recipients: string[] }>();
  for (const { recipient, rule } of decisions) {
    if (!rule) continue;
    const group = groups.get(rule.id) ?? { rule, recipients: [] };
    group.recipients.push(recipient);
    groups.set(rule.id, group);
  }
  return [...groups.values()];
}

/** The subject text an envelope of this rule loses on the way out, or null. */
export function subjectStrip(criteria: RuleCriteria | null): string | null {
  return criteria?.stripSubjectTag && criteria.subjectContains ? criteria.subjectContains : null;
}

/** The first criterion of `rule` this recipient of the message fails, or undefined when the rule applies. */
function missOf(rule: MatchableRule, facts: MessageFacts, key: string, recipient: string): string | undefined {
  if (rule.channel !== facts.channel) return `channel is ${rule.channel}`;
  if (rule.sender !== null && rule.sender.toLowerCase() !== key) return `sender is not ${rule.sender}`;
  const criteria = rule.criteria;
  if (!criteria) return undefined;
  if (criteria.senderDomains && !domainMatches(criteria.senderDomains, domainOf(facts.sender))) {
    return `sender domain is not ${criteria.senderDomains.join(', ')}`;
  }
  if (criteria.recipientDomains && !domainMatches(criteria.recipientDomains, domainOf(recipient))) {
    return `recipient domain is not ${criteria.recipientDomains.join(', ')}`;
  }
  if (criteria.subjectContains !== undefined) {
    const subject = facts.headers?.subject ?? '';
    if (!subject.toLowerCase().includes(criteria.subjectContains.toLowerCase())) {
      return `subject does not contain ${JSON.stringify(criteria.subjectContains)}`;
    }
  }
  if (criteria.header) {
    const { name, value } = criteria.header;
    if (!(facts.headers?.fields.get(name.toLowerCase()) ?? []).includes(value)) {
      return `no header ${name}: ${value}`;
    }
  }
  return undefined;
}

/**
 * Whether a domain passes a list: one of its plain entries (if it has any) and none of its `!` entries,
 * each entry matching itself and its subdomains. An address without a domain (the null sender) passes
 * only a list of `!` entries.
 */
export function domainMatches(list: readonly string[], domain: string | undefined): boolean {
  const within = (entry: string) => domain !== undefined && (domain === entry || domain.endsWith(`.${entry}`));
  const plain = list.filter((entry) => !entry.startsWith('!'));
  if (plain.length > 0 && !plain.some(within)) return false;
  return !list.some((entry) => entry.startsWith('!') && within(entry.slice(1)));
}

/** An address's domain as rules compare it (lower case, IDN as punycode, as the intake normalises). */
export function domainOf(address: string): string | undefined {
  const at = address.lastIndexOf('@');
  if (at < 0) return undefined;
  return normalizedDomain(address.slice(at + 1));
}

/** A domain in the form rules store and compare; undefined for one that is not a domain name. */
export function normalizedDomain(domain: string): string | undefined {
  const ascii = domainToASCII(domain.trim().replace(/\.$/, '').toLowerCase());
  return /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(ascii)
    ? ascii
    : undefined;
}

/** A message's header fields as rules read them: names lower-cased, values unfolded and trimmed. */
export interface HeaderFields {
  fields: Map<string, string[]>;
  /** The first Subject, RFC 2047 words decoded; '' when there is none. */
  subject: string;
}

/** Parses a header block (bytes as stored: UTF-8 header text is read as UTF-8, RFC 6532). */
export function headerFields(head: Buffer): HeaderFields {
  const fields = new Map<string, string[]>();
  const unfolded = head.toString('utf8').replace(/\r?\n(?=[ \t])/g, '');
  for (const line of unfolded.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const values = fields.get(name) ?? [];
    values.push(line.slice(colon + 1).trim());
    fields.set(name, values);
  }
  const raw = fields.get('subject')?.[0];
  return { fields, subject: raw === undefined ? '' : libmime.decodeWords(raw) };
}

/** The header fields of a dry run's sample (POST /v1/config/match): its headers, and its subject if given. */
export function sampleHeaders(subject: string | undefined, headers: ReadonlyArray<{ name: string; value: string }>) {
  const fields = new Map<string, string[]>();
  for (const { name, value } of headers) {
    const key = name.toLowerCase();
    fields.set(key, [...(fields.get(key) ?? []), value.replace(/\r?\n(?=[ \t])/g, '').trim()]);
  }
  const raw = subject ?? fields.get('subject')?.[0];
  return { fields, subject: raw === undefined ? '' : libmime.decodeWords(raw) } satisfies HeaderFields;
}
