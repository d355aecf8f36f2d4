import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { BlockList, isIP } from 'node:net';
import { hash, hashSync, verify } from '@node-rs/bcrypt';
import { HashingSlots } from './hashing-slots.ts';

/**
 * Who may submit mail over SMTP, as Postfix's `smtpd_relay_restrictions = permit_mynetworks,
 * permit_sasl_authenticated, reject` says it: clients in INBOUND_SMTP_ALLOWED_NETWORKS, or clients that
 * authenticated (after STARTTLS) with an account of INBOUND_SMTP_USERS_FILE; with
 * INBOUND_SMTP_SENDER_DOMAINS, only for senders of the organisation's domains.
 */
export interface SubmissionPolicySettings {
  allowedNetworks: Array<{ address: string; prefix: number; family: 'ipv4' | 'ipv6' }>;
  usersFile: string | undefined;
  senderDomains: string[] | undefined;
}

/** A line of an htpasswd file that is not `name:bcrypt-hash` stops start-up, naming the line. */
export class UsersFileError extends Error {}

const BCRYPT = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;

/** Reads an htpasswd file (`htpasswd -B`): one `name:$2y$…` line per account; # comments and blank lines skipped. */
export async function readUsersFile(path: string): Promise<Map<string, string>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new UsersFileError(`INBOUND_SMTP_USERS_FILE=${path} cannot be read: ${(error as Error).message}`);
  }
  const users = new Map<string, string>();
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === '' || line.trimStart().startsWith('#')) return;
    const colon = line.indexOf(':');
    const name = line.slice(0, colon);
    const hash = line.slice(colon + 1).trim();
    if (colon <= 0 || !BCRYPT.test(hash) || !hasUsableCost(hash)) {
      throw new UsersFileError(
        `INBOUND_SMTP_USERS_FILE=${path} line ${index + 1}: expected name:bcrypt-hash ` +
          '($2y$, $2b$ or $2a$, as `htpasswd -B` or `sealpost smtp-user add` write); ' +
          `found ${colon <= 0 ? 'no name' : `"${name}:" followed by something else`}`,
      );
    }
    users.set(name, hash);
  });
  return users;
}

/** A hash's cost: the two digits after `$2y$`. */
const costOf = (hash: string) => Number(hash.slice(4, 6));

/**
 * bcrypt's costs run from 4 to 31, and the salt's 22nd character carries only 2 of its 6 bits (one of
 * `.Oeu`): a hash outside them could never match.
 */
function hasUsableCost(hash: string): boolean {
  const cost = costOf(hash);
  return cost >= 4 && cost <= 31 && '.Oeu'.includes(hash[28]!);
}

/** bcrypt as Apache's htpasswd -B writes it: `$2y$`, the same algorithm as the library's `$2b$`. */
const htpasswdHash = (password: string, cost: number) => hashSync(password, cost).replace(/^\$2[ab]\$/, '$2y$');

/** The htpasswd line of an account: bcrypt, cost 10 (tests take a lower one), `$2y$` as htpasswd -B writes it. */
export function htpasswdLine(name: string, password: string, cost = 10): string {
  if (name === '' || /[:\s]/.test(name)) throw new Error('the user name may not be empty or contain ":" or spaces');
  return `${name}:${htpasswdHash(password, cost)}`;
}

/**
 * bcrypt of a random password nobody knows, at the highest cost of the file's accounts: an unknown user's
 * check costs what a known user's does, so the time of a refusal does not tell which names exist.
 */
async function standInHash(costs: number[]): Promise<string> {
  // Without accounts AUTH is not offered and the stand-in never checked: the cheapest cost then.
  return (await hash(randomBytes(18).toString('base64'), costs.at(-1) ?? 4)).replace(/^\$2b\$/, '$2y$');
}

/** Client addresses whose answer is remembered; past this many, the memory starts again. */
const CLIENTS_REMEMBERED = 1024;

export class SubmissionPolicy {
  private readonly networks = new BlockList();
  /**
   * The answer per client address: BlockList.check parses the address into a SocketAddress each time
   * (about 10 µs, a measurable share of a message's CPU), and every MAIL FROM asks. The networks never change.
   */
  private readonly clients = new Map<string, boolean>();

  private readonly hashing = new HashingSlots();

  private constructor(
    private readonly settings: SubmissionPolicySettings,
    private readonly users: Map<string, string>,
    /** The bcrypt costs of the accounts, each once, lowest first. */
    readonly hashCosts: number[],
    private readonly standIn: string,
  ) {
    for (const network of settings.allowedNetworks)
      this.networks.addSubnet(network.address, network.prefix, network.family);
  }

  static async load(settings: SubmissionPolicySettings): Promise<SubmissionPolicy> {
    const users = settings.usersFile ? await readUsersFile(settings.usersFile) : new Map<string, string>();
    const costs = [...new Set([...users.values()].map(costOf))].sort((a, b) => a - b);
    return new SubmissionPolicy(settings, users, costs, await standInHash(costs));
  }

  /** Whether SMTP AUTH is offered at all (an account exists). */
  get authEnabled(): boolean {
    return this.users.size > 0;
  }

  describe(): { allowedNetworks: string[]; auth: boolean; accounts: number; senderDomains: string[] | null } {
    return {
      allowedNetworks: this.settings.allowedNetworks.map((network) => `${network.address}/${network.prefix}`),
      auth: this.authEnabled,
      accounts: this.users.size,
      senderDomains: this.settings.senderDomains ?? null,
    };
  }

  /** A client in the allowed networks (an IPv4-mapped IPv6 address counts as its IPv4 address). */
  isAllowedClient(address: string): boolean {
    let allowed = this.clients.get(address);
    if (allowed === undefined) {
      const plain = address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
      const family = isIP(plain);
      allowed = family !== 0 && this.networks.check(plain, family === 4 ? 'ipv4' : 'ipv6');
      if (this.clients.size >= CLIENTS_REMEMBERED) this.clients.clear();
      this.clients.set(address, allowed);
    }
    return allowed;
  }

  /**
   * Checks a password (bcrypt, off the event loop, a few at a time: hashing-slots.ts); an unknown user is
   * checked against the stand-in hash, so that it costs what a known user of the highest cost does.
   */
  async authenticate(username: string, password: string): Promise<boolean> {
    const known = this.users.get(username);
    const ok = await this.hashing.run(() => verify(password, known ?? this.standIn));
    return known !== undefined && ok;
  }

  /** Whether an address's domain is one of INBOUND_SMTP_SENDER_DOMAINS or below one (always, when unset). */
  isOwnSender(address: string): boolean {
    const domains = this.settings.senderDomains;
    if (!domains) return true;
    const domain = address
      .slice(address.lastIndexOf('@') + 1)
      .toLowerCase()
      .replace(/\.$/, '');
    return domains.some((own) => domain === own || domain.endsWith(`.${own}`));
  }

  get checksSenders(): boolean {
    return this.settings.senderDomains !== undefined;
  }
}
