import type { ValueKind } from './parsers.ts';

/**
 * How a variable is declared and read (docs/design.md#configuration). Each owner declares its variables
 * once, with defineVariables, and the type of what loadVariables returns is inferred from that one
 * declaration: no interface lists them again. The same declarations print docs/configuration.md.
 *
 * A plain table rather than a JSON-schema library, because each value needs a parser with its own
 * message (Go durations, ports, Go booleans) and the table is the operator's reference too.
 */

/** The services of one Sealpost, and the only list of them. */
export const SERVICE_NAMES = ['auth', 'seal', 'exchange'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** The components' letters in the documentation (docs/design.md): A auth, B seal, C exchange. */
export const serviceLetter = (name: ServiceName): string => String.fromCharCode(65 + SERVICE_NAMES.indexOf(name));

export type Env = Readonly<Record<string, string | undefined>>;

export interface VariableSpec<T = unknown> extends ValueKind<T> {
  readonly name: string;
  readonly meaning: string;
  /** Default as the operator would type it; absent means "unset", and the value may be undefined. */
  readonly default?: string;
  /** Secrets are never echoed back in error messages or the effective-config dump. */
  readonly secret?: boolean;
}

/** Variables by the name the code reads them under, in groups where that reads better (`sms.url`). */
export type Declarations = { readonly [key: string]: VariableSpec | Declarations };

/** Keeps the literal shape (which variables have a default) from which loadVariables' type comes. */
export function defineVariables<const D extends Declarations>(declarations: D): D {
  return declarations;
}

/** One variable that more than one owner lists: the same object in each, so the table shows it once. */
export function defineVariable<const S extends VariableSpec>(spec: S): S {
  return spec;
}

type Value<S> = S extends { parse: (raw: string) => infer T }
  ? S extends { readonly default: string }
    ? T
    : T | undefined
  : never;

/** What loadVariables returns for these declarations: a variable with a default is never undefined. */
export type Values<D> = { -readonly [K in keyof D]: D[K] extends VariableSpec ? Value<D[K]> : Values<D[K]> };

const isSpec = (entry: VariableSpec | Declarations): entry is VariableSpec => typeof entry.parse === 'function';

/**
 * Reads every declared variable from env. A bad value is added to `problems` (the caller fails once,
 * listing them all) and stands in as its default, so that what is built from it can still be built.
 */
export function loadVariables<const D extends Declarations>(declarations: D, env: Env, problems: string[]): Values<D> {
  const values: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(declarations)) {
    values[key] = isSpec(entry) ? readVariable(entry, env, problems) : loadVariables(entry, env, problems);
  }
  return values as Values<D>;
}

function readVariable<T>(spec: VariableSpec<T>, env: Env, problems: string[]): T | undefined {
  const given = env[spec.name];
  const raw = given ?? spec.default;
  if (raw === undefined || (raw === '' && spec.default === undefined)) return undefined;
  try {
    return spec.parse(raw);
  } catch {
    const shown = spec.secret ? '(value hidden)' : JSON.stringify(raw);
    problems.push(`${spec.name}=${shown} is not valid: expected ${spec.expected}`);
    return spec.default === undefined ? undefined : spec.parse(spec.default); // defaults always parse
  }
}

/** A variable the running mode needs: unset is a problem, unless its value was reported already. */
export function required<T>(spec: VariableSpec<T>, value: T | undefined, why: string, problems: string[]): T {
  if (value === undefined && !problems.some((problem) => problem.startsWith(`${spec.name}=`))) {
    problems.push(`${spec.name} is not set: ${why}`);
  }
  return value as T;
}

/** Every variable of the declarations, in declaration order. */
export function variablesOf(declarations: Declarations): VariableSpec[] {
  return Object.values(declarations).flatMap((entry) => (isSpec(entry) ? [entry] : variablesOf(entry)));
}

export class ConfigError extends Error {
  constructor(
    readonly problems: string[],
    options?: { cause?: unknown },
  ) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`, options);
    this.name = 'ConfigError';
  }
}

/** One row of the reference: the variable and who reads it. */
export interface VariableRow {
  spec: VariableSpec;
  /** `all`, or the services whose declarations list it. */
  readers: 'all' | readonly ServiceName[];
}

const component = (row: VariableRow) => (row.readers === 'all' ? 'all' : row.readers.map(serviceLetter).join(', '));

/** Every variable as data (`sealpost config --json`): name, the services that read it, meaning, default. */
export function variablesJson(
  rows: readonly VariableRow[],
): Array<{ name: string; component: string; meaning: string; default: string | null; secret: boolean }> {
  return rows.map((row) => ({
    name: row.spec.name,
    component: component(row),
    meaning: row.spec.meaning,
    default: row.spec.default ?? null,
    secret: Boolean(row.spec.secret),
  }));
}

/** The variable table of docs/configuration.md. */
export function variablesMarkdown(rows: readonly VariableRow[]): string {
  const lines = rows.map(
    ({ spec, ...row }) =>
      `| \`${spec.name}\` | ${component({ spec, ...row })} | ${spec.meaning} ` +
      `| ${spec.default !== undefined ? `\`${spec.default}\`` : 'unset'} |`,
  );
  return ['| Variable | Component | Meaning | Default |', '|---|---|---|---|', ...lines].join('\n');
}
