import { sql, type CompiledQuery, type Kysely } from 'kysely';
import { compileOnce } from '../../kernel/db/compile-once.ts';
import { AppError, badRequest, notFound } from '../../kernel/errors.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import type { Channel, ExchangeTables, Rule, RuleCriteria } from '../tables.ts';
import { normalizedDomain } from './criteria.ts';
import { firstMatchingRule, inExecutionOrder, normalizedSender, senderKey } from './match.ts';
import type { RuleBody, RuleView } from './schemas.ts';
import { RULE_SNAPSHOT_MAX_RULES, RuleSnapshot } from './snapshot.ts';

/** Delivery rules in PostgreSQL, in execution order: lower priority first, then creation order. */
export class RuleStore {
  /** match()'s lookup, run at every SMTP MAIL FROM: built and compiled once (compileOnce), one jsonb parameter. */
  private readonly matchStatement: (asked: string) => CompiledQuery<Rule>;

  /** The early answer at MAIL FROM (hasRoute), without a round trip while it is fresh. */
  private readonly snapshot: RuleSnapshot;

  constructor(
    private readonly db: Kysely<ExchangeTables>,
    /** snapshotTtlMs: SMTP_RULE_CACHE_TTL, which the service passes; without it every lookup asks PostgreSQL. */
    options: { snapshotTtlMs?: number; onSnapshotError?: (error: unknown) => void } = {},
  ) {
    this.snapshot = new RuleSnapshot(
      () =>
        db
          .selectFrom('rules')
          .select(['channel', 'sender'])
          .limit(RULE_SNAPSHOT_MAX_RULES + 1)
          .execute(),
      { ttlMs: options.snapshotTtlMs ?? 0, onError: options.onSnapshotError },
    );
    this.matchStatement = compileOnce((asked: string) => {
      const params = sql<{ channel: Channel; sender_key: string }>`jsonb_to_record(${asked}::jsonb)`.as<'asked'>(
        sql`asked(channel text, sender_key text)`,
      );
      return firstMatchingRule(
        db
          .selectFrom(params)
          .innerJoin('rules', (join) => join.onTrue())
          .selectAll('rules'),
        sql<Channel>`asked.channel`,
        sql<string>`asked.sender_key`,
      );
    }, '{"compile-once":"placeholder"}');
  }

  async list(): Promise<Rule[]> {
    return inExecutionOrder(this.db.selectFrom('rules').selectAll()).execute();
  }

  /** A channel's rules in execution order, read now: what the intake matches per recipient (rules/criteria.ts). */
  async forChannel(channel: Channel): Promise<Rule[]> {
    return inExecutionOrder(this.db.selectFrom('rules').selectAll().where('channel', '=', channel)).execute();
  }

  async get(id: string): Promise<Rule> {
    const rule = await this.db.selectFrom('rules').selectAll().where('id', '=', id).executeTakeFirst();
    if (!rule) throw notFound(`No delivery rule ${id}`);
    return rule;
  }

  async create(body: RuleBody): Promise<Rule> {
    const rule = await this.db.insertInto('rules').values(toRow(body)).returningAll().executeTakeFirstOrThrow();
    this.snapshot.invalidate();
    return rule;
  }

  async update(id: string, body: RuleBody): Promise<Rule> {
    const rule = await this.db
      .updateTable('rules')
      .set({ ...toRow(body), updated_at: new Date() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    this.snapshot.invalidate();
    if (!rule) throw notFound(`No delivery rule ${id}`);
    return rule;
  }

  async delete(id: string): Promise<void> {
    const result = await this.db.deleteFrom('rules').where('id', '=', id).executeTakeFirst();
    this.snapshot.invalidate();
    if (result.numDeletedRows === 0n) throw notFound(`No delivery rule ${id}`);
  }

  /**
   * Whether a message of this channel and sender finds a rule, for the early answer at MAIL FROM: yes from
   * a fresh snapshot of the rules (snapshot.ts), otherwise match() decides (a 503 AppError when none).
   * Not for routing: the statement that writes the envelope matches the rule itself.
   */
  async hasRoute(channel: Channel, sender: string): Promise<void> {
    if (this.snapshot.applies(channel, senderKey(sender))) return;
    await this.match(channel, sender);
  }

  /**
   * The first rule, in execution order, whose params match (rules/match.ts). Throws a 503 AppError when
   * there is no rule at all (at least one must exist before any message is delivered:
   * docs/specification.md#delivery-configuration-rule) or none matches: both are operator configuration to
   * fix, so senders should retry later.
   */
  async match(channel: Channel, sender: string): Promise<Rule> {
    const asked = JSON.stringify({ channel, sender_key: senderKey(sender) });
    const rule = (await this.db.executeQuery(this.matchStatement(asked))).rows[0];
    if (rule) return rule;
    const any = await this.db.selectFrom('rules').select('id').limit(1).executeTakeFirst();
    throw new AppError(
      'unavailable',
      503,
      any
        ? `No delivery rule matches channel ${channel} and ` +
            `sender ${normalizedSender(sender) || '<>'}; add one with POST /v1/config`
        : 'No delivery rule exists yet: create one with POST /v1/config before sending messages',
    );
  }
}

function toRow(body: RuleBody) {
  const { channel, sender } = body.configuration.params;
  let storedSender: string | null = null;
  if (sender !== undefined) {
    storedSender = normalizeEmail(sender) ?? null;
    if (!storedSender)
      throw badRequest(`configuration.params.sender ${JSON.stringify(sender)} is not a valid email address`);
  }
  return {
    name: body.name,
    priority: body.priority,
    channel,
    sender: storedSender,
    outbound: [...body.configuration.outbound],
    criteria: toCriteria(body),
  };
}

/** The criteria as stored: domains normalised, and null when there are none (the rule then matches in SQL). */
function toCriteria(body: RuleBody): RuleCriteria | null {
  const { recipientDomains, senderDomains, subjectContains, header } = body.configuration.params;
  const { stripSubjectTag } = body.configuration;
  if (stripSubjectTag && subjectContains === undefined) {
    throw badRequest('configuration.stripSubjectTag needs configuration.params.subjectContains: the text it strips');
  }
  if (subjectContains !== undefined && !subjectContains.trim()) {
    throw badRequest('configuration.params.subjectContains must hold more than white space');
  }
  const criteria: RuleCriteria = {
    ...(recipientDomains ? { recipientDomains: domains(recipientDomains, 'recipientDomains') } : {}),
    ...(senderDomains ? { senderDomains: domains(senderDomains, 'senderDomains') } : {}),
    ...(subjectContains !== undefined ? { subjectContains } : {}),
    ...(header ? { header: { name: header.name, value: header.value.trim() } } : {}),
    ...(stripSubjectTag ? { stripSubjectTag } : {}),
  };
  return Object.keys(criteria).length ? criteria : null;
}

function domains(list: readonly string[], field: string): string[] {
  return list.map((entry) => {
    const negated = entry.startsWith('!');
    const domain = normalizedDomain(negated ? entry.slice(1) : entry);
    if (!domain) throw badRequest(`configuration.params.${field}: ${JSON.stringify(entry)} is not a domain name`);
    return negated ? `!${domain}` : domain;
  });
}

export function ruleView(rule: Rule): RuleView {
  return {
    id: rule.id,
    name: rule.name,
    priority: rule.priority,
    configuration: {
      params: { channel: rule.channel, ...(rule.sender ? { sender: rule.sender } : {}), ...matchOf(rule.criteria) },
      outbound: rule.outbound,
      ...(rule.criteria?.stripSubjectTag ? { stripSubjectTag: true } : {}),
    },
    created_at: rule.created_at.toISOString(),
    updated_at: rule.updated_at.toISOString(),
  };
}

/** The criteria that belong in params (all but the stripSubjectTag action). */
function matchOf(criteria: RuleCriteria | null): Omit<RuleCriteria, 'stripSubjectTag'> {
  if (!criteria) return {};
  const { stripSubjectTag: _action, ...match } = criteria;
  return match;
}
