import type { Kysely } from 'kysely';
import type { OutboundStrategyName } from '../outbound/strategy-names.ts';
import type { ExchangeTables } from '../tables.ts';
import type { NewEnvelope } from './envelope-writer.ts';

/** One envelope of a message matched per recipient (rules/criteria.ts): its recipients' rule as it was read. */
export interface EnvelopePart extends NewEnvelope {
  rule: { id: string; name: string; updatedAt: Date; outbound: OutboundStrategyName[] };
  subjectStrip: string | null;
}

/**
 * Writes every envelope of a message matched per recipient, with their `accepted` and `routed` status rows, in
 * one transaction: all or none, before the one answer to the client. The rules chosen are locked (FOR KEY
 * SHARE: a delete elsewhere waits for the commit) and compared with what was read; when one was deleted or
 * changed meanwhile nothing is written and the caller reads the rules again (false), so that a rule deleted
 * on another instance cannot route mail to nowhere.
 * One transaction per message rather than the fast path's batched statement (envelope-writer.ts): only
 * messages whose first candidate rule has criteria come here.
 */
export async function writeParts(db: Kysely<ExchangeTables>, parts: EnvelopePart[]): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const ids = [...new Set(parts.map((part) => part.rule.id))];
    const current = await trx
      .selectFrom('rules')
      .select(['id', 'updated_at'])
      .where('id', 'in', ids)
      .forKeyShare()
      .execute();
    const unchanged = parts.every((part) =>
      current.some((row) => row.id === part.rule.id && row.updated_at.getTime() === part.rule.updatedAt.getTime()),
    );
    if (!unchanged) return false;
    await trx
      .insertInto('envelopes')
      .values(
        parts.map((part) => ({
          id: part.id,
          channel: part.channel,
          sender: part.sender,
          recipients: part.recipients,
          size: part.size,
          payload_key: part.payloadKey,
          rule_id: part.rule.id,
          outbound: part.rule.outbound,
          status: 'accepted' as const,
          is_bounce: false,
          body_8bitmime: part.body8bitmime,
          smtputf8: part.smtputf8,
          long_lines: part.longLines,
          subject_strip: part.subjectStrip,
        })),
      )
      .execute();
    // In VALUES order, so the history's ids put `accepted` before `routed` for each part.
    await trx
      .insertInto('message_status')
      .values(
        parts.flatMap((part) => [
          { envelope_id: part.id, status: 'accepted' as const, detail: part.acceptedDetail },
          { envelope_id: part.id, status: 'routed' as const, detail: routedDetail(part) },
        ]),
      )
      .execute();
    return true;
  });
}

/** As the fast path's statement words it (envelope-writer.ts). */
export function routedDetail(part: Pick<EnvelopePart, 'rule'>): string {
  return `by rule "${part.rule.name}" to ${part.rule.outbound.join(', ')}`;
}
