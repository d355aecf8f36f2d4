import { parseArgs } from 'node:util';
import type { MatchAnswer, RuleBody, RuleView } from '../exchange/rules/schemas.ts';
import { confirm, exchangeAdmin, strictArgs, UsageError } from './admin-client.ts';
import type { Config } from './config.ts';

/**
 * `sealpost rules test`: which delivery rule takes each recipient of a sample message, asked of the running
 * exchange (POST /v1/config/match at EXCHANGE_URL), so the answer comes from the rules it routes by.
 * Exits 0 when every recipient has a rule, 1 when one has none (the message would be refused) or on error.
 */

/** The sample as POST /v1/config/match takes it, from the command's flags. */
export function sampleOf(args: string[]) {
  const { values } = parseArgs({
    args,
    options: {
      channel: { type: 'string', default: 'smtp' },
      // Named as swaks names them, and as the sample's fields.
      from: { type: 'string' },
      sender: { type: 'string' },
      to: { type: 'string', multiple: true },
      recipient: { type: 'string', multiple: true },
      subject: { type: 'string' },
      header: { type: 'string', multiple: true },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const recipients = [...(values.to ?? []), ...(values.recipient ?? [])];
  if (!recipients.length) throw new Error('give at least one recipient with --to ADDR');
  const headers = (values.header ?? []).map((field) => {
    const colon = field.indexOf(':');
    if (colon <= 0) throw new Error(`--header ${JSON.stringify(field)}: write it as "Name: value"`);
    return { name: field.slice(0, colon).trim(), value: field.slice(colon + 1).trim() };
  });
  return {
    json: values.json,
    sample: {
      channel: values.channel,
      // No sender given: the null sender <>, as a bounce has.
      sender: values.from ?? values.sender ?? '',
      recipients,
      ...(values.subject !== undefined ? { subject: values.subject } : {}),
      ...(headers.length ? { headers } : {}),
    },
  };
}

export function formatDecisions(answer: MatchAnswer): string {
  const width = Math.max(...answer.recipients.map((r) => r.recipient.length));
  const lines = answer.recipients.map(({ recipient, rule, outbound, stripSubjectTag, reason }) => {
    const who = recipient.padEnd(width);
    if (!rule) return `${who}  ${reason}`;
    const strip = stripSubjectTag ? `, subject without ${JSON.stringify(stripSubjectTag)}` : '';
    return `${who}  rule "${rule.name}" (priority ${rule.priority}, ${rule.id}) -> ${outbound?.join(', ')}${strip}`;
  });
  lines.push(
    '',
    answer.envelopes
      ? `-- ${answer.envelopes} envelope${answer.envelopes === 1 ? '' : 's'}`
      : '-- refused: a recipient has no rule',
  );
  return `${lines.join('\n')}\n`;
}

export async function rulesTestCommand(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  let parsed: ReturnType<typeof sampleOf>;
  try {
    parsed = sampleOf(args);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const answer = await exchangeAdmin<MatchAnswer>(config, 'POST', '/v1/config/match', parsed.sample);
  out.write(parsed.json ? `${JSON.stringify(answer, null, 2)}\n` : formatDecisions(answer));
  return answer.envelopes > 0 ? 0 : 1;
}

/**
 * `sealpost rules list|add|move|remove`: the delivery rules of the running exchange, managed through its
 * admin API (/v1/config), so that nobody needs curl and the token's header to set up the first rule.
 */
export async function rulesCommand(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'test':
      return rulesTestCommand(config, rest, out);
    case 'list':
      return listRules(config, rest, out);
    case 'add':
      return addRule(config, rest, out);
    case 'move':
      return moveRule(config, rest, out);
    case 'remove':
      return removeRule(config, rest, out);
    default:
      throw new UsageError(
        command === undefined ? 'give a rules command' : `unknown rules command ${JSON.stringify(command)}`,
      );
  }
}

/** One rule on one line: priority, name, what it matches, where it sends, its id. */
export function formatRules(rules: RuleView[]): string {
  if (rules.length === 0)
    return 'No delivery rules: every message is refused (451 4.3.0). Add one with `sealpost rules add`.\n';
  const width = Math.max(4, ...rules.map((rule) => rule.name.length));
  const lines = rules.map((rule) => {
    const { params, outbound, stripSubjectTag } = rule.configuration;
    const { channel, ...criteria } = params;
    const matches = Object.entries(criteria)
      .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
      .join(' ');
    return (
      `${String(rule.priority).padStart(6)}  ${rule.name.padEnd(width)}  ${channel.padEnd(4)} ` +
      `${matches || '(every message)'}${stripSubjectTag ? ' stripSubjectTag' : ''} -> ${outbound.join(',')}  ${rule.id}`
    );
  });
  return `${`${'prio'.padStart(6)}  ${'name'.padEnd(width)}  chan matches -> outbound  id`}\n${lines.join('\n')}\n`;
}

async function listRules(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values, positionals } = strictArgs(args, { json: { type: 'boolean', default: false } });
  if (positionals.length) throw new UsageError(`rules list takes no argument, got ${JSON.stringify(positionals[0])}`);
  const { rules } = await exchangeAdmin<{ rules: RuleView[] }>(config, 'GET', '/v1/config');
  out.write(values.json ? `${JSON.stringify(rules, null, 2)}\n` : formatRules(rules));
  return 0;
}

/** The rule body POST /v1/config takes, from `rules add`'s flags. */
export function ruleBodyOf(args: string[]): RuleBody {
  const { values, positionals } = strictArgs(args, {
    name: { type: 'string' },
    priority: { type: 'string', default: '100' },
    channel: { type: 'string', default: 'smtp' },
    outbound: { type: 'string', multiple: true },
    sender: { type: 'string' },
    'recipient-domain': { type: 'string', multiple: true },
    'sender-domain': { type: 'string', multiple: true },
    'subject-contains': { type: 'string' },
    header: { type: 'string' },
    'strip-subject-tag': { type: 'boolean', default: false },
  });
  const name = values.name ?? positionals[0];
  if (positionals.length > (values.name === undefined ? 1 : 0))
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals.at(-1))}`);
  if (!name) throw new UsageError('give the rule a name: --name NAME');
  if (!/^-?\d{1,10}$/.test(values.priority))
    throw new UsageError(`--priority ${JSON.stringify(values.priority)}: give an integer`);
  if (values.channel !== 'smtp' && values.channel !== 'json')
    throw new UsageError(`--channel ${JSON.stringify(values.channel)}: expected smtp or json`);
  const outbound = (values.outbound ?? []).flatMap((list) => list.split(',')).map((item) => item.trim());
  if (!outbound.length) throw new UsageError('say where the messages go: --outbound seal, --outbound smtp, or both');
  const header = values.header === undefined ? undefined : headerOf(values.header);
  if (values['strip-subject-tag'] && values['subject-contains'] === undefined)
    throw new UsageError('--strip-subject-tag removes the --subject-contains text: give that too');
  return {
    name,
    priority: Number(values.priority),
    configuration: {
      params: {
        channel: values.channel,
        ...(values.sender !== undefined ? { sender: values.sender } : {}),
        ...(values['recipient-domain'] ? { recipientDomains: values['recipient-domain'] } : {}),
        ...(values['sender-domain'] ? { senderDomains: values['sender-domain'] } : {}),
        ...(values['subject-contains'] !== undefined ? { subjectContains: values['subject-contains'] } : {}),
        ...(header ? { header } : {}),
      },
      outbound: outbound as RuleBody['configuration']['outbound'],
      ...(values['strip-subject-tag'] ? { stripSubjectTag: true } : {}),
    },
  };
}

function headerOf(field: string): { name: string; value: string } {
  const colon = field.indexOf(':');
  if (colon <= 0) throw new UsageError(`--header ${JSON.stringify(field)}: write it as "Name: value"`);
  return { name: field.slice(0, colon).trim(), value: field.slice(colon + 1).trim() };
}

async function addRule(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  const rule = await exchangeAdmin<RuleView>(config, 'POST', '/v1/config', ruleBodyOf(args));
  out.write(`Added rule "${rule.name}" (priority ${rule.priority}, ${rule.id}).\n`);
  return 0;
}

/** A rule by id, or by its name when exactly one rule has it. */
async function findRule(config: Config, which: string | undefined): Promise<RuleView> {
  if (!which) throw new UsageError('name the rule: its id or its name (`sealpost rules list` shows both)');
  const { rules } = await exchangeAdmin<{ rules: RuleView[] }>(config, 'GET', '/v1/config');
  const byId = rules.find((rule) => rule.id === which);
  if (byId) return byId;
  const named = rules.filter((rule) => rule.name === which);
  if (named.length === 1) return named[0]!;
  throw new Error(
    named.length
      ? `${named.length} rules are named ${JSON.stringify(which)}: give the id`
      : `no rule has the id or name ${JSON.stringify(which)}`,
  );
}

/** Reorders by priority (lower runs first): `--priority N`, or just before / after another rule. */
async function moveRule(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values, positionals } = strictArgs(args, {
    priority: { type: 'string' },
    before: { type: 'string' },
    after: { type: 'string' },
  });
  if (positionals.length !== 1) throw new UsageError('name one rule to move: its id or its name');
  const given = [values.priority, values.before, values.after].filter((value) => value !== undefined);
  if (given.length !== 1) throw new UsageError('say where to: --priority N, --before RULE or --after RULE');
  const rule = await findRule(config, positionals[0]);
  let priority: number;
  if (values.priority !== undefined) {
    if (!/^-?\d{1,10}$/.test(values.priority))
      throw new UsageError(`--priority ${JSON.stringify(values.priority)}: give an integer`);
    priority = Number(values.priority);
  } else {
    // Equal priorities run in creation order, so a move lands strictly before or after the other rule.
    const other = await findRule(config, values.before ?? values.after);
    priority = values.before !== undefined ? other.priority - 1 : other.priority + 1;
  }
  const { name, configuration } = rule;
  const moved = await exchangeAdmin<RuleView>(config, 'PUT', `/v1/config/${rule.id}`, {
    name,
    priority,
    configuration,
  });
  out.write(`Moved rule "${moved.name}" from priority ${rule.priority} to ${moved.priority}.\n`);
  return 0;
}

async function removeRule(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values, positionals } = strictArgs(args, { yes: { type: 'boolean', short: 'y', default: false } });
  if (positionals.length !== 1) throw new UsageError('name one rule to remove: its id or its name');
  const rule = await findRule(config, positionals[0]);
  if (!(await confirm(`Remove rule "${rule.name}" (priority ${rule.priority}, ${rule.id})?`, { yes: values.yes }))) {
    out.write('Nothing removed.\n');
    return 1;
  }
  await exchangeAdmin(config, 'DELETE', `/v1/config/${rule.id}`);
  out.write(`Removed rule "${rule.name}".\n`);
  return 0;
}
