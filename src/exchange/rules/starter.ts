import type { Kysely } from 'kysely';
import type { Logger } from '../../kernel/logger.ts';
import type { ExchangeTables } from '../tables.ts';
import type { RuleBody } from './schemas.ts';
import { RuleStore } from './store.ts';

/**
 * The embedded default's starter rules: a first email to localhost:2525 is sealed, and replies go out. The
 * first shows a match beyond the channel (docs/operating.md#deciding-what-to-seal): a `[secure]` tag in the
 * subject is removed before the recipient sees the message; the rule below seals the rest all the same.
 */
export const STARTER_RULES: RuleBody[] = [
  {
    name: 'starter: seal mail tagged [secure], tag removed',
    priority: 90,
    configuration: {
      params: { channel: 'smtp', subjectContains: '[secure]' },
      outbound: ['seal'],
      stripSubjectTag: true,
    },
  },
  {
    name: 'starter: seal inbound mail',
    priority: 100,
    configuration: { params: { channel: 'smtp' }, outbound: ['seal'] },
  },
  { name: 'starter: relay replies', priority: 100, configuration: { params: { channel: 'json' }, outbound: ['smtp'] } },
];

/**
 * Creates the starter rules on the first start of a brand-new database (migration 0003 marked it), if
 * that start is the embedded default and not production. Whatever the mode, the first start takes the
 * mark: a database first started in production, or whose starter rules an operator deleted, never gets
 * them (again). Mark and rules go in one transaction, so concurrent instances create them only once.
 */
export async function createStarterRules(
  db: Kysely<ExchangeTables>,
  options: { embedded: boolean; production: boolean; logger: Logger },
): Promise<void> {
  const created = await db.transaction().execute(async (trx) => {
    const taken = await trx
      .deleteFrom('pending_setup')
      .where('task', '=', 'starter_rules')
      .returning('task')
      .executeTakeFirst();
    if (!taken || !options.embedded || options.production) return [];
    const rules = new RuleStore(trx);
    const rows = [];
    for (const body of STARTER_RULES) rows.push({ id: (await rules.create(body)).id, body });
    return rows;
  });
  for (const { id, body } of created) {
    options.logger.info({ ruleId: id, rule: body }, 'created starter delivery rule (embedded default)');
  }
}
