import type { Kysely } from 'kysely';

/**
 * Rules that match on more than channel and sender (recipient and sender domains, a subject text, a
 * header) keep those criteria in one jsonb column; null for a rule with none, which is every rule stored
 * before: they match as they did, in SQL. An envelope records the subject text to strip on the way out
 * (stripSubjectTag); null strips nothing, as for every envelope accepted before.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('rules').addColumn('criteria', 'jsonb').execute();
  await db.schema.alterTable('envelopes').addColumn('subject_strip', 'text').execute();
}
