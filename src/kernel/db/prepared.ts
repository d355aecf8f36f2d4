import { createHash } from 'node:crypto';
import type pg from 'pg';

/** Statement text → the name it is prepared under on each connection. */
const names = new Map<string, string>();

/**
 * Marks a statement's text as one to prepare once per connection (compileOnce's hot statements): its
 * next executions skip PostgreSQL's parse and, once the plan cache settles on a generic plan, its
 * planning, which for the intake's statements (CTEs, a lateral join) cost more than executing them.
 */
export function prepareOnEachConnection(text: string): void {
  if (!names.has(text)) names.set(text, `sealpost_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`);
}

/**
 * Sends the statements marked by prepareOnEachConnection as named ones (pg then parses each once per
 * connection); every other query goes as before. Kysely's PostgreSQL driver calls query(text, values)
 * with no way to name a statement, hence the wrapper of each new connection's query().
 */
export function namePreparedStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((...args: unknown[]) => {
    const [text, values] = args;
    const name = typeof text === 'string' && args.length === 2 ? names.get(text) : undefined;
    return name ? query({ name, text, values }) : query(...args);
  }) as typeof client.query;
}

/**
 * Every column of a row type, named, for a prepared statement's result: a `*` that grows with a migration
 * makes PostgreSQL refuse the statement ("cached plan must not change result type") on every instance
 * still running the older code. The type refuses a list that leaves a column out, naming it:
 * `everyColumn<Envelope>()(['id', …])`.
 */
export function everyColumn<Row>() {
  return <const Columns extends ReadonlyArray<keyof Row>>(
    columns: Columns &
      (Exclude<keyof Row, Columns[number]> extends never ? unknown : { missing: Exclude<keyof Row, Columns[number]> }),
  ): Columns => columns;
}
