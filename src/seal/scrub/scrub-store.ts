import type { Kysely } from 'kysely';
import type { Clock } from '../../kernel/clock.ts';
import type { SealScrubCopiesTable, SealTables } from '../tables.ts';

/** What the scrub needs of a message to read its copies and check them against the seal. */
export interface ScrubTarget {
  id: string;
  cid: string;
  wrapped: boolean;
  fileName: string;
  wrappedKey: string;
  sha256: string;
  size: number;
  /** The clusters whose pin of it is `pinned`: the others are the pin follower's (GET /v1/admin/unpinned). */
  pinnedOn: string[];
}

/** One copy as the scrub found it. */
export interface CopyFinding {
  cluster: string;
  state: 'intact' | 'damaged' | 'missing';
  detail: string;
  repair: string;
}

export interface ListedCopy {
  sealedId: string;
  cid: string;
  cluster: string;
  state: SealScrubCopiesTable['state'];
  detail: string;
  repair: string;
  foundAt: Date;
  checkedAt: Date;
}

/** The scrub's state in the database: which messages are due, and the copies found wanting. */
export class ScrubStore {
  constructor(
    private readonly db: Kysely<SealTables>,
    private readonly clock: Clock,
  ) {}

  /**
   * Claims up to `limit` running messages whose copies are due to be read (never read and sealed before
   * `sealedBefore`, one SEAL_SCRUB_INTERVAL ago; or read that long ago), oldest due first, pushing each one's due
   * date to `leaseUntil`. Race-free across
   * instances: the upsert takes a row only when it is still due once its lock is held, so of two instances
   * claiming the same message one gets it. Ended messages (expired, withdrawn) have no key and are skipped.
   */
  async claimDue(limit: number, leaseUntil: Date, sealedBefore: Date): Promise<ScrubTarget[]> {
    const now = new Date(this.clock.now());
    const claimed = await this.db
      .insertInto('seal_scrub_due')
      .columns(['sealed_id', 'due_at'])
      .expression((eb) =>
        eb
          .selectFrom('sealed_messages as m')
          .leftJoin('seal_scrub_due as d', 'd.sealed_id', 'm.id')
          .select(['m.id', eb.val(leaseUntil).as('due_at')])
          .where('m.ended_at', 'is', null)
          .where('m.wrapped_key', 'is not', null)
          .where((w) => w.or([w('m.expires_at', 'is', null), w('m.expires_at', '>', now)]))
          .where((w) =>
            w.or([w.and([w('d.due_at', 'is', null), w('m.sealed_at', '<=', sealedBefore)]), w('d.due_at', '<=', now)]),
          )
          .orderBy('d.due_at', (o) => o.asc().nullsFirst())
          .orderBy('m.id')
          .limit(limit),
      )
      .onConflict((oc) =>
        oc
          .column('sealed_id')
          .doUpdateSet((eb) => ({ due_at: eb.ref('excluded.due_at') }))
          .where('seal_scrub_due.due_at', '<=', now),
      )
      .returning('sealed_id')
      .execute();
    if (claimed.length === 0) return [];
    const rows = await this.db
      .selectFrom('sealed_messages')
      .select(['id', 'cid', 'wrapped', 'file_name', 'wrapped_key', 'sha256', 'size'])
      .where(
        'id',
        'in',
        claimed.map((row) => row.sealed_id),
      )
      .where('wrapped_key', 'is not', null)
      .execute();
    const pinned = await this.db
      .selectFrom('sealed_pins')
      .select(['sealed_id', 'cluster'])
      .where(
        'sealed_id',
        'in',
        rows.map((row) => row.id),
      )
      .where('status', '=', 'pinned')
      .execute();
    return rows.map((row) => ({
      id: row.id,
      cid: row.cid,
      wrapped: row.wrapped,
      fileName: row.file_name,
      wrappedKey: row.wrapped_key!,
      sha256: row.sha256,
      size: row.size,
      pinnedOn: pinned.filter((pin) => pin.sealed_id === row.id).map((pin) => pin.cluster),
    }));
  }

  /**
   * Records what one read of a message's copies found: a damaged or missing copy is listed (its first finding
   * date kept while the state holds), an intact one cleared from the list; the message is due again at `nextDue`.
   */
  async record(sealedId: string, findings: CopyFinding[], nextDue: Date): Promise<void> {
    const now = new Date(this.clock.now());
    await this.db.transaction().execute(async (tx) => {
      const intact = findings.filter((finding) => finding.state === 'intact').map((finding) => finding.cluster);
      if (intact.length > 0) {
        await tx
          .deleteFrom('seal_scrub_copies')
          .where('sealed_id', '=', sealedId)
          .where('cluster', 'in', intact)
          .execute();
      }
      for (const finding of findings) {
        if (finding.state === 'intact') continue;
        await tx
          .insertInto('seal_scrub_copies')
          .values({
            sealed_id: sealedId,
            cluster: finding.cluster,
            state: finding.state,
            detail: finding.detail,
            repair: finding.repair,
            found_at: now,
            checked_at: now,
          })
          .onConflict((oc) =>
            oc.columns(['sealed_id', 'cluster']).doUpdateSet((eb) => ({
              state: eb.ref('excluded.state'),
              detail: eb.ref('excluded.detail'),
              repair: eb.ref('excluded.repair'),
              checked_at: eb.ref('excluded.checked_at'),
              // A copy that went from missing to damaged (or back) was found so now.
              found_at: eb
                .case()
                .when('seal_scrub_copies.state', '=', eb.ref('excluded.state'))
                .then(eb.ref('seal_scrub_copies.found_at'))
                .else(eb.ref('excluded.found_at'))
                .end(),
            })),
          )
          .execute();
      }
      await tx.updateTable('seal_scrub_due').set({ due_at: nextDue }).where('sealed_id', '=', sealedId).execute();
    });
  }

  /** The copies found damaged or missing of messages still running, on the clusters in force, oldest first. */
  async list(clusters: string[], limit: number): Promise<ListedCopy[]> {
    if (clusters.length === 0) return [];
    const rows = await this.db
      .selectFrom('seal_scrub_copies as c')
      .innerJoin('sealed_messages as m', 'm.id', 'c.sealed_id')
      .select(['c.sealed_id', 'm.cid', 'c.cluster', 'c.state', 'c.detail', 'c.repair', 'c.found_at', 'c.checked_at'])
      .where('m.ended_at', 'is', null)
      .where('c.cluster', 'in', clusters)
      .orderBy('c.found_at')
      .orderBy('c.sealed_id')
      .orderBy('c.cluster')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      sealedId: row.sealed_id,
      cid: row.cid,
      cluster: row.cluster,
      state: row.state,
      detail: row.detail,
      repair: row.repair,
      foundAt: row.found_at,
      checkedAt: row.checked_at,
    }));
  }

  /** How many listed copies there are, by cluster and state (messages still running only). */
  async counts(): Promise<Array<{ cluster: string; state: SealScrubCopiesTable['state']; count: number }>> {
    const rows = await this.db
      .selectFrom('seal_scrub_copies as c')
      .innerJoin('sealed_messages as m', 'm.id', 'c.sealed_id')
      .select((eb) => ['c.cluster', 'c.state', eb.fn.countAll<string>().as('count')])
      .where('m.ended_at', 'is', null)
      .groupBy(['c.cluster', 'c.state'])
      .execute();
    return rows.map((row) => ({ cluster: row.cluster, state: row.state, count: Number(row.count) }));
  }
}
