import { sql, type Kysely } from 'kysely';

/**
 * The trail of a sealed message (docs/specification.md#trail): what happened to it and who read what, append-only
 * and kept SEAL_TRAIL_RETENTION, longer than the content. `seq` is the order written; `first` marks the first
 * entry of its event for its recipient, which the partial unique index decides race-free (POST
 * /v1/sealed/{id}/events answers it). The database itself refuses an UPDATE, a TRUNCATE and the DELETE of an
 * entry younger than the retention, which the deleting transaction states in `seal.trail_retention`
 * (trail/retention.ts): a proof that nobody could rewrite it through the service's own connection.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sealed_trail')
    .addColumn('seq', 'bigserial', (c) => c.primaryKey())
    .addColumn('sealed_id', 'uuid', (c) => c.notNull().references('sealed_messages.id'))
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text')
    .addColumn('client', 'text')
    .addColumn('detail', 'jsonb')
    .addColumn('first', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await db.schema.createIndex('sealed_trail_message').on('sealed_trail').columns(['sealed_id', 'at']).execute();
  // The retention's question (which entries are old) must not read the whole trail.
  await db.schema.createIndex('sealed_trail_at').on('sealed_trail').column('at').execute();
  await sql`
    create unique index sealed_trail_first on seal.sealed_trail (sealed_id, event, (lower(coalesce(recipient, ''))))
    where first`.execute(db);
  // The sender's list (GET /v1/senders/{sender}/sealed): the addresses compare case-insensitively.
  await sql`create index sealed_messages_sender on seal.sealed_messages (lower(sender), sealed_at desc)`.execute(db);

  await sql`
    create function seal.sealed_trail_append_only() returns trigger language plpgsql as $$
    declare
      retention interval := nullif(current_setting('seal.trail_retention', true), '')::interval;
    begin
      if tg_op = 'DELETE' and retention is not null then
        if old.at < now() - retention then
          return old;
        end if;
      end if;
      raise exception 'the trail is append-only: % of an entry kept by SEAL_TRAIL_RETENTION refused', tg_op
        using errcode = 'insufficient_privilege';
    end
    $$`.execute(db);
  await sql`
    create trigger sealed_trail_append_only before update or delete on seal.sealed_trail
    for each row execute function seal.sealed_trail_append_only()`.execute(db);
  await sql`
    create trigger sealed_trail_no_truncate before truncate on seal.sealed_trail
    for each statement execute function seal.sealed_trail_append_only()`.execute(db);
}
