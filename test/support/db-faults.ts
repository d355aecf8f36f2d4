import { sql } from 'kysely';
import { openTestPostgres } from './postgres.ts';

/**
 * Makes one test database unreachable the way a real outage looks to a pool: new connections are
 * refused (`ALLOW_CONNECTIONS false`) and the open ones are killed by the server (or only those of one
 * application_name, to cut one kind of connection and keep it from coming back). The returned function
 * lets connections in again. Run through an admin connection to the `test` database, so the server
 * itself stays up for everyone else.
 */
export async function refuseConnections(
  databaseUrl: string,
  options: {
    /** Kills only the connections that say this application_name; the pools keep theirs. */
    applicationName?: string;
  } = {},
): Promise<() => Promise<void>> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  const admin = await openTestPostgres();
  await sql`alter database ${sql.id(name)} allow_connections false`.execute(admin.db);
  const othersOnIt = sql`datname = ${name} and pid <> pg_backend_pid()`;
  const named = options.applicationName === undefined ? sql`true` : sql`application_name = ${options.applicationName}`;
  await sql`select pg_terminate_backend(pid) from pg_stat_activity where ${othersOnIt} and ${named}`.execute(admin.db);
  let restored = false;
  return async () => {
    if (restored) return;
    restored = true;
    try {
      await sql`alter database ${sql.id(name)} allow_connections true`.execute(admin.db);
    } finally {
      await admin.close();
    }
  };
}
