import { CompiledQuery, sql, type Kysely } from 'kysely';

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** How PostgreSQL plans a statement: for its values (a custom plan), or for any values (the generic plan). */
export type PlanMode = 'force_custom_plan' | 'force_generic_plan';

/**
 * Every node of the plan PostgreSQL makes for a compiled statement. The statement is prepared by name, as
 * a statement compiled with `prepare` is (kernel/db/prepared.ts), and explained through EXECUTE with its
 * parameters as literals: an EXPLAIN sent with bound parameters would always get a custom plan.
 */
export async function planNodes(db: Kysely<unknown>, compiled: CompiledQuery, mode: PlanMode): Promise<PlanNode[]> {
  return db.transaction().execute(async (trx) => {
    await sql`select set_config('plan_cache_mode', ${mode}, true)`.execute(trx);
    await trx.executeQuery(CompiledQuery.raw(`prepare planned as ${compiled.sql}`));
    const values = compiled.parameters.map((value) =>
      sql.lit(value instanceof Date ? value.toISOString() : Array.isArray(value) ? `{${value.join(',')}}` : value),
    );
    const explained = await sql<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>`explain (format json) execute
      planned(${sql.join(values)})`.execute(trx);
    await sql`deallocate planned`.execute(trx);
    const flatten = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(flatten)];
    return flatten(explained.rows[0]!['QUERY PLAN'][0]!.Plan);
  });
}

/** The nodes of a plan that read all of `table` (a sequential scan), named for an assertion's message. */
export function fullReadsOf(nodes: PlanNode[], table: string): string[] {
  return nodes
    .filter((node) => node['Relation Name'] === table && node['Node Type'] === 'Seq Scan')
    .map((node) => `${node['Node Type']} on ${table}`);
}
