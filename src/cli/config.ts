import { AUTH_VARIABLES, loadAuthConfig } from '../auth/config.ts';
import {
  AUTH_PORT,
  AUTH_PUBLIC_URL,
  EXCHANGE_PORT,
  EXCHANGE_URL,
  SEAL_MAX_MESSAGE_SIZE,
  SEAL_PORT,
  SEAL_URL,
} from '../contracts/variables.ts';
import { EXCHANGE_VARIABLES, loadExchangeConfig } from '../exchange/config.ts';
import { ConfigError, type LoadOptions, loadSharedConfig, SHARED_VARIABLES } from '../kernel/config.ts';
import { placeholderProblem, sharedSecretProblems } from '../kernel/secret-strength.ts';
import { DKIM_VARIABLES, NOTIFY_DEFAULT_LANGUAGE, OUTBOUND_OUTBOX, OUTBOUND_SMTP_URL } from '../kernel/mail-config.ts';
import {
  type Declarations,
  type Env,
  SERVICE_NAMES,
  type ServiceName,
  serviceLetter,
  type VariableRow,
  type VariableSpec,
  variablesJson as json,
  variablesMarkdown as markdown,
  variablesOf,
} from '../kernel/variables.ts';
import { loadSealConfig, SEAL_VARIABLES } from '../seal/config.ts';

/**
 * The whole configuration of a Sealpost process: the shared part and each service's own section, each
 * declared and loaded by its owner (docs/design.md#configuration). Only the CLI and the tests see it
 * whole; a service is handed the shared part and its own section.
 */

/**
 * Reads and validates every variable; collects all problems before failing so an operator fixes them
 * in one go. Throws ConfigError naming each variable, its value (unless secret) and what was expected.
 */
export function loadConfig(env: Env = process.env, options: LoadOptions = {}) {
  const problems: string[] = [];
  const shared = loadSharedConfig(env, problems);
  const input = (service: ServiceName) => ({
    env,
    shared,
    problems,
    starting: options.services?.includes(service) ?? false,
  });
  const config = {
    ...shared,
    auth: loadAuthConfig(input('auth')),
    seal: loadSealConfig(input('seal')),
    exchange: loadExchangeConfig(input('exchange')),
  };
  if (shared.production) {
    const secrets = secretValues(env);
    for (const [name, raw] of secrets) {
      const problem = placeholderProblem(name, raw);
      if (problem) problems.push(problem);
    }
    problems.push(...sharedSecretProblems(secrets));
  }
  // A variable two services read is told once.
  if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
  return config;
}

export type Config = ReturnType<typeof loadConfig>;

/** Every secret variable with the value it was given, in the reference's order. */
function secretValues(env: Env): Array<[string, string | undefined]> {
  return variableRows()
    .filter(({ spec }) => spec.secret)
    .map(({ spec }) => [spec.name, env[spec.name]]);
}

const SERVICE_VARIABLES: Record<ServiceName, Declarations> = {
  auth: AUTH_VARIABLES,
  seal: SEAL_VARIABLES,
  exchange: EXCHANGE_VARIABLES,
};
/** An owner's variables, flattened once. */
const SERVICE_SPECS = Object.fromEntries(
  SERVICE_NAMES.map((name) => [name, variablesOf(SERVICE_VARIABLES[name])]),
) as Record<ServiceName, VariableSpec[]>;

/**
 * Every variable once, in the reference's order: the shared ones, those between services, the mail
 * ones, then each service's own; each with the services whose declarations list it.
 */
export function variableRows(): VariableRow[] {
  const order: VariableSpec[] = [
    ...variablesOf(SHARED_VARIABLES),
    AUTH_PORT,
    SEAL_PORT,
    EXCHANGE_PORT,
    AUTH_PUBLIC_URL,
    SEAL_URL,
    EXCHANGE_URL,
    SEAL_MAX_MESSAGE_SIZE,
    OUTBOUND_SMTP_URL,
    OUTBOUND_OUTBOX,
    ...variablesOf(DKIM_VARIABLES),
    NOTIFY_DEFAULT_LANGUAGE,
    ...SERVICE_NAMES.flatMap((name) => SERVICE_SPECS[name]),
  ];
  const shared = new Set(variablesOf(SHARED_VARIABLES));
  return [...new Set(order)].map((spec) => ({
    spec,
    readers: shared.has(spec) ? 'all' : SERVICE_NAMES.filter((name) => SERVICE_SPECS[name].includes(spec)),
  }));
}

/** Every variable as data (`sealpost config --json`): name, the services that read it, meaning, default. */
export const variablesJson = () => json(variableRows());

/** The variable table of docs/configuration.md, generated from the declarations so the documentation cannot drift. */
export const variablesMarkdown = () => markdown(variableRows());

/** docs/configuration.md, whole: written by `npm run docs`, checked by a test. */
export function configurationDoc(): string {
  const components = SERVICE_NAMES.map((name) => `${serviceLetter(name)} ${name}`).join(', ');
  return [
    '# Configuration',
    '',
    '<!-- Generated from the variable declarations (src/kernel/config.ts and src/<service>/config.ts) ' +
      'by `npm run docs`; edit there, not here. -->',
    '',
    'Everything is an environment variable, read once at start. A bad value stops the process with a message',
    "that names the variable, the value (never for secrets) and what was expected. Durations use Go's syntax",
    "exactly (`15m`, `1h30m`, `1.5h`, `336h`; units `ns us µs ms s m h`); booleans Go's (`true`/`false`,",
    `\`1\`/\`0\`, \`t\`/\`f\`). Component: ${components}. \`sealpost config --markdown\` prints this table,`,
    '`sealpost config --json` the same as data.',
    '',
    variablesMarkdown(),
    '',
  ].join('\n');
}
