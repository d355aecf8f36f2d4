import { parseArgs } from 'node:util';
import type { MatchAnswer } from '../exchange/rules/schemas.ts';
import type { Config } from './config.ts';
import { adminToken } from './queue.ts';

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
  const { json, sample } = sampleOf(args);
  const url = config.auth.exchangeUrl;
  const response = await fetch(`${url}/v1/config/match`, {
    method: 'POST',
    headers: { authorization: `Bearer ${await adminToken(config)}`, 'content-type': 'application/json' },
    body: JSON.stringify(sample),
  }).catch((error: unknown) => {
    throw new Error(
      `the exchange at EXCHANGE_URL=${url} does not answer: ${(error as Error).cause ?? (error as Error).message}`,
    );
  });
  if (!response.ok) {
    const text = await response.text();
    let message = text.slice(0, 300);
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {}
    throw new Error(`the exchange at ${url} answered ${response.status}: ${message}`);
  }
  const answer = (await response.json()) as MatchAnswer;
  out.write(json ? `${JSON.stringify(answer, null, 2)}\n` : formatDecisions(answer));
  return answer.envelopes > 0 ? 0 : 1;
}
