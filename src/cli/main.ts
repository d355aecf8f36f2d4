import { readFileSync } from 'node:fs';
import { loadConfig, variablesJson, variablesMarkdown, type Config } from './config.ts';
import { ConfigError, SERVICE_NAMES, type ServiceName } from '../kernel/variables.ts';
import { clockFor } from '../kernel/clock.ts';
import { createLogger, resolveLogFormat } from '../kernel/logger.ts';
import { UsageError } from './admin-client.ts';
import { keepGeneratedAdminToken } from './admin-client.ts';
import { migrate, openStores, startSealpost } from './start.ts';
import { shareGeneratedTokens } from './tokens.ts';

const CHECK_HELP = 'try every dependency (database, object store, IPFS, relay, SMS, clamd); exit 1 if one fails';

const USAGE = `Usage: sealpost <command> [--help]

  start [all|auth|seal|exchange]   start services (default: all three in one process)
  migrate                          apply the database migrations of every service, then exit
  check                            ${CHECK_HELP}
  config [--markdown|--json]       print the environment variables Sealpost reads (markdown table or JSON)
  queue [list] [--json] [--limit=N]
                                   the delivery queue of the running exchange (EXCHANGE_URL), like mailq
  queue shape [--by recipient|sender] [--status S] [--top N] [--json]
                                   waiting recipients by domain and age, like qshape
  queue flush|hold|release|requeue|delete [ID ...] [--status S] [--sender ADDR]
                                   [--recipient-domain D] [--older-than 2h] [--all] [--yes] [--json]
                                   deliver now (flush: all when nothing is named), hold, release, route again
                                   by the current rules, or delete (asks first; --yes without a terminal)
  rules list [--json]              the delivery rules of the running exchange, in execution order
  rules add --name NAME --outbound seal|smtp[,...] [--priority 100] [--channel smtp|json]
                                   [--sender ADDR] [--recipient-domain D ...] [--sender-domain D ...]
                                   [--subject-contains TEXT [--strip-subject-tag]] [--header "Name: value"]
                                   add a delivery rule (lower priority runs first)
  rules move RULE --priority N | --before RULE | --after RULE
                                   reorder a rule (RULE: its id, or its name when unique)
  rules remove RULE [--yes]        remove a rule (asks first; --yes without a terminal)
  rules test --to ADDR [--to ADDR ...] [--from ADDR] [--channel smtp|json]
                                   [--subject TEXT] [--header "Name: value" ...] [--json]
                                   (--recipient and --sender name --to and --from too; no --from: <>)
                                   which delivery rule of the running exchange (EXCHANGE_URL) takes each
                                   recipient of a sample message (a dry run); exit 1 when one has none
  contacts import FILE.csv [--all-or-nothing] [--json]
                                   upsert the seal service's contacts directory (SEAL_URL) from a CSV file
                                   (columns email, mobile, language); bad rows are listed by line
  contacts show EMAIL [--json]     an address's directory entry and the number its recipient confirmed
  keys status|rotate [--json]      the seal master key versions (SEAL_URL): what each still wraps, and
                                   whether it may be removed; rotate re-wraps everything under the
                                   current version in the background
  smtp-user add NAME               print the INBOUND_SMTP_USERS_FILE line of an SMTP AUTH account (bcrypt);
                                   the password is asked for, or read from standard input when piped
  dkim-key generate --domain D --selector S --out FILE [--type rsa|ed25519] [--bits 2048]
                                   write a DKIM private key and print the DNS TXT record to publish
  devstack ipfs-cluster [--port 9094 --proxy-port 9095 --data DIR --user U --pass P]
                                   run the IPFS Cluster stand-in alone (development)
  --version                        print the version
  -h, --help                       print this help
`;

/** What `sealpost <command> --help` prints: the command's lines of USAGE, and nothing is run. */
function commandHelp(command: string): string | undefined {
  const lines = USAGE.split('\n');
  const blocks: string[] = [];
  for (let start = 0; start < lines.length; start++) {
    if (!(lines[start]!.startsWith(`  ${command} `) || lines[start] === `  ${command}`)) continue;
    let end = start + 1;
    while (end < lines.length && /^ {20,}\S/.test(lines[end]!)) end++;
    // `  rules add …` becomes `sealpost rules add …`, 14 columns to the right: its continuation lines follow.
    blocks.push(
      [
        `sealpost ${lines[start]!.slice(2)}`,
        ...lines.slice(start + 1, end).map((line) => `${' '.repeat(14)}${line}`),
      ].join('\n'),
    );
  }
  return blocks.length ? `Usage: ${blocks.join('\n       ')}\n` : undefined;
}

/** A command's failure: a UsageError (a mistake in the command line) exits 2 with the command's usage. */
function failed(command: string, error: unknown): number {
  if (error instanceof UsageError) {
    process.stderr.write(`sealpost ${command}: ${error.message}\n\n${commandHelp(command) ?? ''}`);
    return 2;
  }
  process.stderr.write(`sealpost ${command}: ${(error as Error).message}\n`);
  return 1;
}

/** The version in package.json, found above the source (src/cli/) or the build (dist/server/cli/). */
function version(): string {
  for (const path of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'sealpost' && pkg.version) return pkg.version;
    } catch {
      // not here: the next place
    }
  }
  return 'unknown';
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Help never runs anything: `migrate --help` applies no migration, `start --help` starts nothing.
  if (command !== undefined && (rest.includes('--help') || rest.includes('-h'))) {
    const help = commandHelp(command);
    if (help) {
      process.stdout.write(help);
      return 0;
    }
  }
  switch (command) {
    case '--version':
    case '-v':
    case 'version':
      process.stdout.write(`sealpost ${version()}\n`);
      return 0;
    case 'start':
      return start(rest[0] ?? 'all');
    case 'migrate':
      return migrateOnly();
    case 'check': {
      const { checkCommand } = await import('./check.ts');
      return checkCommand(readConfig(['seal', 'exchange', 'auth']), process.stdout);
    }
    case 'queue': {
      const { queueCommand } = await import('./queue.ts');
      return queueCommand(readConfig(['exchange']), rest, process.stdout).catch((error) => failed('queue', error));
    }
    case 'contacts': {
      const { contactsCommand } = await import('./contacts.ts');
      try {
        return await contactsCommand(readConfig(), rest, process.stdout);
      } catch (error) {
        process.stderr.write(`sealpost contacts: ${(error as Error).message}\n`);
        return 1;
      }
    }
    case 'rules': {
      const { rulesCommand } = await import('./rules.ts');
      return rulesCommand(readConfig(['exchange']), rest, process.stdout).catch((error) => failed('rules', error));
    }
    case 'keys': {
      const { keysCommand } = await import('./keys.ts');
      try {
        return await keysCommand(readConfig(['seal']), rest, process.stdout);
      } catch (error) {
        process.stderr.write(`sealpost keys: ${(error as Error).message}\n`);
        return 1;
      }
    }
    case 'smtp-user':
      if (rest[0] === 'add' && rest[1] !== undefined && rest.length === 2) {
        const { smtpUserAdd } = await import('./smtp-user.ts');
        return smtpUserAdd(rest[1]);
      }
      process.stderr.write('Usage: sealpost smtp-user add NAME\n');
      return 2;
    case 'dkim-key':
      if (rest[0] === 'generate') {
        const { dkimKeyGenerate } = await import('./dkim-key.ts');
        return dkimKeyGenerate(rest.slice(1));
      }
      process.stderr.write(
        'Usage: sealpost dkim-key generate --domain D --selector S --out FILE [--type rsa|ed25519]\n',
      );
      return 2;
    case 'config':
      if (rest.length === 0 || (rest.length === 1 && rest[0] === '--markdown')) {
        process.stdout.write(`${variablesMarkdown()}\n`);
        return 0;
      }
      if (rest.length === 1 && rest[0] === '--json') {
        process.stdout.write(`${JSON.stringify(variablesJson(), null, 2)}\n`);
        return 0;
      }
      process.stderr.write('Usage: sealpost config [--markdown|--json]\n');
      return 2;
    case 'devstack':
      if (rest[0] === 'ipfs-cluster') {
        const { runIpfsClusterStandIn } = await import('../devstack/ipfs-cluster/index.ts');
        await runIpfsClusterStandIn(rest.slice(1));
        return 0;
      }
      break;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return 0;
  }
  process.stderr.write(`Unknown command: ${argv.join(' ')}\n\n${USAGE}`);
  return 2;
}

function readConfig(services: ServiceName[] = []): Config {
  try {
    return loadConfig(process.env, { services });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`sealpost: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

async function start(which: string): Promise<number> {
  const names: ServiceName[] =
    which === 'all' ? ['seal', 'exchange', 'auth'] : SERVICE_NAMES.filter((n) => n === which);
  if (names.length === 0) {
    process.stderr.write(`sealpost: unknown service ${JSON.stringify(which)}; expected all, auth, seal or exchange\n`);
    return 2;
  }
  // Generated tokens live in the data folder, so that services started separately on it agree.
  const { config } = await shareGeneratedTokens(readConfig(names));
  const logger = createLogger({ level: config.logLevel, name: 'sealpost', format: config.logFormat });
  const started = Date.now();
  const embedded = which === 'all' && !config.production;
  const sealpost = await startSealpost(config, names, logger, {
    ipfsStandIn: embedded && !config.seal.envCluster,
    embedded,
    clock: clockFor(config.env),
  });
  logger.info({ services: names, startupMs: Date.now() - started }, 'sealpost started');
  if (names.includes('exchange')) await keepGeneratedAdminToken(config);

  // The handlers go in before the banner: whoever waits for the banner may signal the moment it is
  // written, before a line after the write has run (a stop that came back as killed by SIGINT in CI).
  const stopped = new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'shutting down');
      // A shutdown that hangs (a stuck connection, a dead dependency) must not keep the process forever.
      setTimeout(() => {
        logger.error('graceful shutdown timed out; exiting');
        process.exit(1);
      }, config.shutdownTimeout).unref();
      sealpost.stop().then(resolve, (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        resolve();
      });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  // With JSON logs, stdout is a stream of JSON lines for a collector: the banner (and the tokens it may hold)
  // goes to stderr, where a person still sees it and no parser trips on it.
  const bannerOut = resolveLogFormat(config.logFormat) === 'json' ? process.stderr : process.stdout;
  bannerOut.write(`\n${sealpost.banner.join('\n')}\n\n`);
  await stopped;
  logger.info('stopped');
  return 0;
}

async function migrateOnly(): Promise<number> {
  const config = readConfig();
  const logger = createLogger({ level: config.logLevel, name: 'sealpost', format: config.logFormat });
  const { database } = await openStores(config, false);
  try {
    await migrate(database, ['seal', 'exchange', 'auth'], logger);
    logger.info('migrations up to date');
  } finally {
    await database.close();
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`sealpost: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
