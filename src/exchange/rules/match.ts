import { expressionBuilder, type Expression, type SelectQueryBuilder, type SqlBool } from 'kysely';
import { normalizeEmail } from '../../kernel/email.ts';
import type { Channel, ExchangeTables } from '../tables.ts';

/**
 * How a message finds its delivery rule, in one place: RuleStore.match (the SMTP server's early answer at
 * MAIL FROM) and the envelope writer (which routes inside the statement that stores the envelope) must
 * never disagree, or a sender told "accepted" at MAIL FROM would be refused after DATA. The one
 * disagreement allowed is in time: MAIL FROM may answer yes from rules read up to SMTP_RULE_CACHE_TTL
 * ago (snapshot.ts), so a rule deleted on another instance in that moment refuses after DATA instead.
 * A rule with criteria beyond channel and sender (rules/criteria.ts) counts here as one that may apply: the
 * envelope writer leaves a message whose first such rule has criteria to the per-recipient match.
 */

/**
 * An envelope sender as it is stored and as rules see it: normalised like a rule's sender ('' for the
 * null sender <>). An address normalizeEmail cannot parse is kept as given: it can then match only a
 * catch-all rule, which is the answer it deserves.
 */
export function normalizedSender(sender: string): string {
  return sender ? (normalizeEmail(sender) ?? sender) : '';
}

/**
 * The key a sender is compared by. Lower-cased local part included, as Postfix's lookup tables do: no
 * real mail system hands out Bob@ and bob@ to two people, and a reply rule must not miss on case.
 */
export function senderKey(sender: string): string {
  return normalizedSender(sender).toLowerCase();
}

const rules = expressionBuilder<ExchangeTables, 'rules'>();

/** A rule applies to its channel, and to every sender (no sender) or the one it names. */
function ruleApplies(channel: Channel | Expression<Channel>, key: string | Expression<string>): Expression<SqlBool> {
  return rules.and([
    rules('rules.channel', '=', channel),
    rules.or([rules('rules.sender', 'is', null), rules(rules.fn<string>('lower', ['rules.sender']), '=', key)]),
  ]);
}

/**
 * Narrows a query on `rules` to the rule a message takes: the first applicable one in execution order.
 * `key` is a senderKey(), or a column holding one.
 */
export function firstMatchingRule<DB extends ExchangeTables, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  channel: Channel | Expression<Channel>,
  key: string | Expression<string>,
): SelectQueryBuilder<DB, TB, O> {
  return inExecutionOrder(query.where(ruleApplies(channel, key))).limit(1);
}

/** Rules in the order they run: lower priority first, ties in creation order, the id last so the order is stable. */
export function inExecutionOrder<DB extends ExchangeTables, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
): SelectQueryBuilder<DB, TB, O> {
  return query
    .orderBy(rules.ref('rules.priority'))
    .orderBy(rules.ref('rules.created_at'))
    .orderBy(rules.ref('rules.id'));
}
