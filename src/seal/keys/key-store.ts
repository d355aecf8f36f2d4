import { sql, type Kysely } from 'kysely';
import type { Clock } from '../../kernel/clock.ts';
import { KEY_VARIABLES, type Keyring } from '../crypto/keyring.ts';
import { CLUSTER_PASS_LABEL, keyCheckLabel, secretVersion } from '../crypto/secret-box.ts';
import type { SealTables, StoredCluster } from '../tables.ts';

/** What the check value of a version wraps: any fixed text does; only that it opens matters. */
const CHECK_TEXT = Buffer.from('sealpost key check', 'utf8');

/** What a version still wraps: message keys of running messages, and stored cluster passwords. */
export interface Remaining {
  version: number;
  messages: number;
  clusterPasswords: number;
}

export interface Rotation {
  version: number;
  requestedAt: Date;
  finishedAt: Date | null;
  rewrapped: number;
}

/** A message key to re-wrap, as it stands. */
export interface WrappedMessageKey {
  id: string;
  wrappedKey: string;
}

/** The master key versions' state in the database: check values, what each version wraps, and rotations. */
export class KeyStore {
  constructor(
    private readonly db: Kysely<SealTables>,
    private readonly clock: Clock,
  ) {}

  /**
   * Each configured version must be the key it was when it first wrapped (its check value opens), so that nothing
   * is wrapped under a version another instance, or a later start, cannot unwrap; a version used for the first time
   * gets its check value; and the current version wraps and unwraps again (an HSM key allowed to decrypt but not
   * to encrypt, or the other way round, is refused here rather than at the first message). Throws a sentence naming
   * the version's variable.
   */
  async checkVersions(keyring: Keyring): Promise<void> {
    const current = keyring.versions().find((entry) => entry.version === keyring.current)!;
    try {
      const probe = keyCheckLabel(current.version);
      if (!keyring.unwrap(keyring.wrap(CHECK_TEXT, probe), probe).equals(CHECK_TEXT)) throw new Error('differs');
    } catch (error) {
      throw new Error(
        `${current.variable}: the current key version ${current.version} does not wrap and unwrap again ` +
          `(${(error as Error).message}): nothing is sealed with it`,
      );
    }
    for (const { version, variable } of keyring.versions()) {
      await this.db
        .insertInto('seal_key_versions')
        .values({ version, check_value: keyring.wrapWith(version, CHECK_TEXT, keyCheckLabel(version)) })
        .onConflict((oc) => oc.column('version').doNothing())
        .execute();
      const row = await this.db
        .selectFrom('seal_key_versions')
        .select('check_value')
        .where('version', '=', version)
        .executeTakeFirstOrThrow();
      let opens = false;
      try {
        opens = keyring.unwrap(row.check_value, keyCheckLabel(version)).equals(CHECK_TEXT);
      } catch {
        opens = false;
      }
      if (!opens) {
        throw new Error(
          `${variable}: key version ${version} is not the key that version ${version} wrapped with before ` +
            '(its check value in seal.seal_key_versions does not open): give the same key for a version on every ' +
            'instance, and a new version number to a new key',
        );
      }
    }
  }

  /**
   * What each version still wraps, running messages only: an ended message has no key (destroyed), an expired one
   * is about to lose it (SEAL_END_INTERVAL) and is never read again.
   */
  async remaining(): Promise<Remaining[]> {
    const now = new Date(this.clock.now());
    const messages = await this.db
      .selectFrom('sealed_messages')
      .select((eb) => ['key_version', eb.fn.countAll<string>().as('count')])
      .where('wrapped_key', 'is not', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .groupBy('key_version')
      .execute();
    const byVersion = new Map<number, Remaining>();
    const of = (version: number) => {
      const entry = byVersion.get(version) ?? { version, messages: 0, clusterPasswords: 0 };
      byVersion.set(version, entry);
      return entry;
    };
    for (const row of messages) of(row.key_version).messages += Number(row.count);
    for (const config of await this.clusterConfigs()) {
      for (const cluster of config.clusters) {
        const version = cluster.passEncrypted === undefined ? undefined : secretVersion(cluster.passEncrypted);
        if (version !== undefined) of(version).clusterPasswords++;
      }
    }
    return [...byVersion.values()].sort((a, b) => a.version - b.version);
  }

  /**
   * Refuses a start without a version that still wraps something: a retired version may leave the configuration
   * only once a rotation re-wrapped all it wrapped (`sealpost keys status` says when).
   */
  async assertConfigured(keyring: Keyring): Promise<void> {
    const missing = (await this.remaining()).filter((entry) => !keyring.has(entry.version));
    if (missing.length === 0) return;
    const what = missing
      .map(
        (entry) =>
          `version ${entry.version} (${entry.messages} message keys, ${entry.clusterPasswords} cluster passwords)`,
      )
      .join(', ');
    throw new Error(
      `Key versions that still wrap something are not configured: ${what}. Give them again in ${KEY_VARIABLES}, ` +
        'and remove a version only once `sealpost keys status` shows it wraps nothing',
    );
  }

  /** Running messages whose key another version than `version` wrapped, by id, after `afterId`. */
  async wrappedByOthers(version: number, limit: number, afterId: string | undefined): Promise<WrappedMessageKey[]> {
    const now = new Date(this.clock.now());
    let query = this.db
      .selectFrom('sealed_messages')
      .select(['id', 'wrapped_key'])
      .where('key_version', '<>', version)
      .where('wrapped_key', 'is not', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .orderBy('id')
      .limit(limit);
    if (afterId !== undefined) query = query.where('id', '>', afterId);
    const rows = await query.execute();
    return rows.map((row) => ({ id: row.id, wrappedKey: row.wrapped_key! }));
  }

  /**
   * Replaces a message key's wrapping only if it is still the one that was read: a message ended meanwhile (key
   * destroyed) stays ended, and a key another instance re-wrapped first is not written twice. The rotation's count
   * moves in the same statement, so that it is exact whenever the process is killed. True when replaced.
   */
  async replaceMessageKey(id: string, was: string, now: string, version: number): Promise<boolean> {
    const row = await this.db
      .with('replaced', (db) =>
        db
          .updateTable('sealed_messages')
          .set({ wrapped_key: now, key_version: version })
          .where('id', '=', id)
          .where('wrapped_key', '=', was)
          .returning('id'),
      )
      .updateTable('seal_key_rotations')
      .set({ rewrapped: sql`rewrapped + (select count(*) from replaced)` })
      .where('version', '=', version)
      .returning(sql<string>`(select count(*) from replaced)`.as('count'))
      .executeTakeFirst();
    return Number(row?.count ?? 0) === 1;
  }

  /** Every stored cluster configuration (the history too: each row's passwords are wrapped), oldest first. */
  async clusterConfigs(): Promise<Array<{ id: number; clusters: StoredCluster[] }>> {
    return this.db.selectFrom('cluster_configs').select(['id', 'clusters']).orderBy('id').execute();
  }

  /** Re-wraps the passwords of one stored configuration that another version wrapped; how many it re-wrapped. */
  async rewrapClusterConfig(id: number, keyring: Keyring): Promise<number> {
    return this.db.transaction().execute(async (tx) => {
      const row = await tx
        .selectFrom('cluster_configs')
        .select('clusters')
        .where('id', '=', id)
        .forUpdate()
        .executeTakeFirst();
      if (!row) return 0;
      let count = 0;
      const clusters = row.clusters.map((cluster) => {
        const { passEncrypted } = cluster;
        if (passEncrypted === undefined || secretVersion(passEncrypted) === keyring.current) return cluster;
        count++;
        const pass = keyring.unwrap(passEncrypted, CLUSTER_PASS_LABEL);
        return { ...cluster, passEncrypted: keyring.wrap(pass, CLUSTER_PASS_LABEL) };
      });
      if (count > 0) {
        await tx
          .updateTable('cluster_configs')
          .set({ clusters: JSON.stringify(clusters) })
          .where('id', '=', id)
          .execute();
        await tx
          .updateTable('seal_key_rotations')
          .set({ rewrapped: sql`rewrapped + ${count}` })
          .where('version', '=', keyring.current)
          .execute();
      }
      return count;
    });
  }

  /**
   * Asks for everything to be re-wrapped under `version`: a rotation to it is opened (again, if one finished
   * before and something was wrapped by another version since); a rotation to another version still open is
   * closed, as the newer one covers it.
   */
  async requestRotation(version: number): Promise<Rotation> {
    const now = new Date(this.clock.now());
    await this.db.transaction().execute(async (tx) => {
      await tx
        .updateTable('seal_key_rotations')
        .set({ finished_at: now })
        .where('version', '<>', version)
        .where('finished_at', 'is', null)
        .execute();
      await tx
        .insertInto('seal_key_rotations')
        .values({ version, requested_at: now })
        .onConflict((oc) =>
          oc
            .column('version')
            .doUpdateSet({ requested_at: now, finished_at: null })
            .where('seal_key_rotations.finished_at', 'is not', null),
        )
        .execute();
    });
    return (await this.rotation(version))!;
  }

  async rotation(version: number): Promise<Rotation | undefined> {
    const row = await this.db
      .selectFrom('seal_key_rotations')
      .selectAll()
      .where('version', '=', version)
      .executeTakeFirst();
    return row
      ? { version, requestedAt: row.requested_at, finishedAt: row.finished_at, rewrapped: Number(row.rewrapped) }
      : undefined;
  }

  /** The newest rotation asked for, whatever its version. */
  async latestRotation(): Promise<Rotation | undefined> {
    const row = await this.db
      .selectFrom('seal_key_rotations')
      .select('version')
      .orderBy('requested_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row ? this.rotation(row.version) : undefined;
  }

  /**
   * Takes (or extends) the lease of the open rotation to `version` until `until`: true for the one instance that
   * holds it. The lease is how instances do the re-wrap once between them; a killed holder's lease runs out.
   */
  async lease(version: number, until: Date, holder: string): Promise<boolean> {
    const now = new Date(this.clock.now());
    const taken = await this.db
      .updateTable('seal_key_rotations')
      .set({ lease_until: until, lease_holder: holder })
      .where('version', '=', version)
      .where('finished_at', 'is', null)
      .where((eb) =>
        eb.or([
          eb('lease_until', 'is', null),
          eb('lease_until', '<=', now),
          eb.and([eb('lease_holder', '=', holder), eb('lease_until', '>', now)]),
        ]),
      )
      .executeTakeFirst();
    return taken.numUpdatedRows === 1n;
  }

  /** Closes the rotation and lets go of its lease. */
  async finish(version: number): Promise<void> {
    await this.db
      .updateTable('seal_key_rotations')
      .set({ finished_at: new Date(this.clock.now()), lease_until: null, lease_holder: null })
      .where('version', '=', version)
      .where('finished_at', 'is', null)
      .execute();
  }

  /** Lets go of a lease held (a stop), so that another instance goes on at once. */
  async release(version: number, holder: string): Promise<void> {
    await this.db
      .updateTable('seal_key_rotations')
      .set({ lease_until: null, lease_holder: null })
      .where('version', '=', version)
      .where('lease_holder', '=', holder)
      .execute();
  }
}
