import type { Compilable, CompiledQuery } from 'kysely';

/**
 * A statement of a hot path whose text never changes, only one parameter: built and compiled by Kysely
 * once, then executed with the parameter swapped in. Building and compiling a large query (CTEs, a
 * lateral join, the schema plugin's pass) costs more CPU than PostgreSQL spends executing it, so a
 * statement run for every message is compiled once per process instead.
 *
 * `build` gets a placeholder for the varying parameter and must pass it as a bound value (not inline
 * SQL); the returned function gives the statement for an actual value.
 */
export function compileOnce<R, V>(
  build: (placeholder: V) => Compilable<R>,
  placeholder: NoInfer<V>,
): (value: V) => CompiledQuery<R> {
  let compiled: CompiledQuery<R> | undefined;
  let index = -1;
  return (value) => {
    if (!compiled) {
      compiled = build(placeholder).compile();
      index = compiled.parameters.indexOf(placeholder);
      if (index < 0 || compiled.parameters.lastIndexOf(placeholder) !== index) {
        throw new Error('compileOnce: the placeholder must appear exactly once among the parameters');
      }
    }
    const parameters = [...compiled.parameters];
    parameters[index] = value;
    return { ...compiled, parameters };
  };
}
