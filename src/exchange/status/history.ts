import type { Kysely } from 'kysely';
import type { EnvelopeStatus, ExchangeTables } from '../tables.ts';

export interface StatusEntry {
  status: EnvelopeStatus;
  detail: string | null;
  at: Date;
}

/** A message's status history, from the live table and the archive alike (one snapshot, one query). */
export class StatusHistory {
  constructor(private readonly db: Kysely<ExchangeTables>) {}

  async read(envelopeId: string): Promise<StatusEntry[]> {
    const rows = await this.db
      .selectFrom('message_status')
      .select(['id', 'status', 'detail', 'created_at'])
      .where('envelope_id', '=', envelopeId)
      .unionAll(
        this.db
          .selectFrom('message_status_archive')
          .select(['id', 'status', 'detail', 'created_at'])
          .where('envelope_id', '=', envelopeId),
      )
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((row) => ({ status: row.status, detail: row.detail, at: row.created_at }));
  }
}
