import type { QueuedEnvelope, QueueShape, QueueSummary } from '../exchange/queue/view.ts';
import { confirm, exchangeAdmin, strictArgs, UsageError } from './admin-client.ts';
import type { Config } from './config.ts';

/**
 * `sealpost queue` (Postfix's mailq, qshape, postqueue -f and postsuper -h/-H/-r/-d): the envelopes waiting
 * in the exchange, their shape by domain and age, and an operator's actions on them. It asks the running
 * exchange (/v1/admin/queue… at EXCHANGE_URL), so it also works on the embedded default, whose database only
 * the running process can open.
 */

interface QueueAnswer {
  summary: QueueSummary[];
  envelopes: QueuedEnvelope[];
}

interface ActionAnswer {
  action: string;
  count: number;
  ids: string[];
  skipped: Array<{ id: string; reason: string }>;
}

const ACTIONS = ['flush', 'hold', 'release', 'requeue', 'delete'] as const;
type Action = (typeof ACTIONS)[number];

/** What each action did, for its summary line: `held 2 envelopes`. */
const DONE: Record<Action, string> = {
  flush: 'due now',
  hold: 'held',
  release: 'released',
  requeue: 'requeued',
  delete: 'deleted',
};

/** `1h02m`, `4m05s`, `12s`: ages as an operator reads them. */
function age(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${String(Math.floor((s % 86400) / 3600)).padStart(2, '0')}h`;
}

export function formatQueue(answer: QueueAnswer): string {
  const lines: string[] = [];
  if (answer.envelopes.length === 0 && answer.summary.every((row) => row.count === 0)) return 'Mail queue is empty\n';
  for (const envelope of answer.envelopes) {
    lines.push(
      `${envelope.id}  ${envelope.status.padEnd(10)} ${age(envelope.ageSeconds).padStart(7)}  ` +
        `${String(envelope.size).padStart(9)} bytes  attempts ${envelope.attempts}  <${envelope.sender}>`,
    );
    for (const recipient of envelope.recipients) lines.push(`    ${recipient}`);
    if (envelope.status === 'retrying')
      lines.push(`    next attempt ${envelope.nextAttemptAt}: ${envelope.lastError ?? '(no error recorded)'}`);
  }
  const total = answer.summary.reduce((sum, row) => sum + row.count, 0);
  const byStatus = answer.summary.map((row) => `${row.count} ${row.status} (oldest ${age(row.oldestAgeSeconds)})`);
  lines.push('', `-- ${total} envelope${total === 1 ? '' : 's'}: ${byStatus.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/** qshape's table: one row per domain, one column per age bucket (minutes), the total first. */
export function formatShape(shape: QueueShape): string {
  const heads = [
    '',
    'T',
    ...shape.bucketsMinutes.map((minutes, i) =>
      i === shape.bucketsMinutes.length - 1 ? `${minutes}+` : String(minutes),
    ),
  ];
  const rows = [
    ['TOTAL', shape.total.total, ...shape.total.counts],
    ...shape.domains.map((row) => [row.domain, row.total, ...row.counts]),
  ].map((row) => row.map(String));
  const width = Math.max(5, ...rows.map((row) => row[0]!.length));
  const cell = (value: string, i: number) => (i === 0 ? value.padStart(width) : value.padStart(5));
  return `${[heads, ...rows].map((row) => row.map(cell).join(' ')).join('\n')}\n`;
}

export async function queueCommand(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  const [first, ...rest] = args;
  if (first === 'shape') return shapeCommand(config, rest, out);
  if ((ACTIONS as readonly string[]).includes(first ?? '')) return actionCommand(config, first as Action, rest, out);
  const { values, positionals } = strictArgs(first === 'list' ? rest : args, {
    json: { type: 'boolean', default: false },
    limit: { type: 'string', default: '1000' },
  });
  if (positionals.length) throw new UsageError(`unknown queue command ${JSON.stringify(positionals[0])}`);
  if (!/^[1-9][0-9]{0,3}$/.test(values.limit))
    throw new UsageError(`--limit ${JSON.stringify(values.limit)}: give 1 to 9999`);
  const answer = await exchangeAdmin<QueueAnswer>(config, 'GET', `/v1/admin/queue?limit=${values.limit}`);
  out.write(values.json ? `${JSON.stringify(answer, null, 2)}\n` : formatQueue(answer));
  return 0;
}

async function shapeCommand(config: Config, args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values, positionals } = strictArgs(args, {
    json: { type: 'boolean', default: false },
    by: { type: 'string', default: 'recipient' },
    status: { type: 'string' },
    top: { type: 'string', default: '20' },
  });
  if (positionals.length) throw new UsageError(`queue shape takes no argument, got ${JSON.stringify(positionals[0])}`);
  if (values.by !== 'recipient' && values.by !== 'sender')
    throw new UsageError(`--by ${JSON.stringify(values.by)}: expected recipient or sender`);
  const query = new URLSearchParams({ by: values.by, top: values.top });
  if (values.status) query.set('status', values.status);
  const shape = await exchangeAdmin<QueueShape>(config, 'GET', `/v1/admin/queue/shape?${query}`);
  out.write(values.json ? `${JSON.stringify(shape, null, 2)}\n` : formatShape(shape));
  return 0;
}

async function actionCommand(
  config: Config,
  action: Action,
  args: string[],
  out: NodeJS.WritableStream,
): Promise<number> {
  const { values, positionals: ids } = strictArgs(args, {
    all: { type: 'boolean', default: false },
    status: { type: 'string' },
    sender: { type: 'string' },
    'recipient-domain': { type: 'string' },
    'older-than': { type: 'string' },
    yes: { type: 'boolean', short: 'y', default: false },
    json: { type: 'boolean', default: false },
  });
  const selection = {
    ...(ids.length ? { ids } : {}),
    ...(values.status !== undefined ? { status: values.status } : {}),
    ...(values.sender !== undefined ? { sender: values.sender } : {}),
    ...(values['recipient-domain'] !== undefined ? { recipientDomain: values['recipient-domain'] } : {}),
    ...(values['older-than'] !== undefined ? { olderThan: values['older-than'] } : {}),
  };
  const filtered = Object.keys(selection).length > 0;
  // flush with nothing named flushes everything, as postqueue -f does; the others want it said.
  if (!filtered && !values.all && action !== 'flush')
    throw new UsageError(`say which envelopes: ID ..., --status, --sender, --recipient-domain, --older-than, or --all`);
  if (action === 'delete') {
    const which = ids.length
      ? `${ids.length} envelope${ids.length === 1 ? '' : 's'} (${ids.join(', ')})`
      : filtered
        ? `every waiting envelope with ${describe(selection)}`
        : 'EVERY envelope in the queue';
    if (!(await confirm(`Delete ${which} and their messages, without a bounce?`, { yes: values.yes }))) {
      out.write('Nothing deleted.\n');
      return 1;
    }
  }
  const answer = await exchangeAdmin<ActionAnswer>(
    config,
    'POST',
    `/v1/admin/queue/${action}`,
    filtered ? selection : { all: true },
  );
  if (values.json) {
    out.write(`${JSON.stringify(answer, null, 2)}\n`);
  } else {
    const lines = [
      `${DONE[action]}: ${answer.count} envelope${answer.count === 1 ? '' : 's'}`,
      ...answer.ids.map((id) => `  ${id}`),
    ];
    out.write(`${lines.join('\n')}\n`);
    // What was asked for and not done goes where errors go: the exit status is 1 for it.
    for (const skip of answer.skipped) process.stderr.write(`not ${DONE[action]}: ${skip.id}: ${skip.reason}\n`);
  }
  return answer.skipped.length ? 1 : 0;
}

function describe(selection: Record<string, unknown>): string {
  return Object.entries(selection)
    .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
    .join(', ');
}
