import type { Compilable, CompiledQuery } from 'kysely';
import { prepareOnEachConnection } from './prepared.ts';

export interface CompileOnceOptions {
  /**
   * Prepared once per connection (kernel/db/prepared.ts): PostgreSQL then plans it once for all values
   * (a generic plan) instead of at every execution. Only for a statement whose plan cannot depend on the
   * values: a condition that selects a partial index must be written as a literal, not a parameter, or
   * the generic plan cannot use that index.
   */
  prepare?: boolean;
}

/**
 * A statement of a hot path whose text never changes, only one parameter: built and compiled by Kysely
 * once, then executed with the parameter swapped in. Building and compiling a large query (CTEs, a
 * lateral join, the schema plugin's pass) costs more CPU than PostgreSQL spends executing it, so a
 * statement run for every message is compiled once per process instead.
 *
 * `build` gets a placeholder for the varying parameter and must pass it as a bound value (not inline
 * SQL); the returned function gives the statement for an actual value. The one-parameter form of
 * compileOnceWith.
 */
export function compileOnce<R, V>(
  build: (placeholder: V) => Compilable<R>,
  placeholder: NoInfer<V>,
  options: CompileOnceOptions = {},
): (value: V) => CompiledQuery<R> {
  const statement = compileOnceWith(({ value }: { value: V }) => build(value), { value: placeholder }, options);
  return (value) => statement({ value });
}

/**
 * compileOnce for a statement with several varying parameters, named in `placeholders`. Each placeholder
 * must be a value the statement uses for nothing else (a Date object of its own, an unlikely number); it may
 * stand in several places (one LIMIT for several CTEs), and every place it stands gets the actual value.
 */
export function compileOnceWith<R, V extends Record<string, unknown>>(
  build: (placeholders: V) => Compilable<R>,
  placeholders: NoInfer<V>,
  options: CompileOnceOptions = {},
): (values: V) => CompiledQuery<R> {
  let compiled: CompiledQuery<R> | undefined;
  let slots: Array<[index: number, name: keyof V]> = [];
  return (values) => {
    if (!compiled) {
      compiled = build(placeholders).compile();
      if (options.prepare) prepareOnEachConnection(compiled.sql);
      const names = Object.keys(placeholders) as Array<keyof V>;
      slots = compiled.parameters.flatMap((parameter, index) =>
        names.filter((name) => placeholders[name] === parameter).map((name) => [index, name] as [number, keyof V]),
      );
      const missing = names.filter((name) => !slots.some(([, used]) => used === name));
      if (missing.length > 0 || new Set(slots.map(([index]) => index)).size !== slots.length) {
        throw new Error(`compileOnceWith: each placeholder must be its own value, among the parameters (${missing})`);
      }
    }
    const parameters = [...compiled.parameters];
    for (const [index, name] of slots) parameters[index] = values[name];
    return { ...compiled, parameters };
  };
}
