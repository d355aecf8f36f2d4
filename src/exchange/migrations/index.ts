import type { Migration } from 'kysely';
import * as m0001 from './0001_exchange.ts';
import * as m0002 from './0002_delivery.ts';
import * as m0003 from './0003_starter_rules.ts';
import * as m0004 from './0004_mail_parameters.ts';
import * as m0005 from './0005_storing_index.ts';
import * as m0006 from './0006_lean_status_history.ts';
import * as m0007 from './0007_payload_pending.ts';
import * as m0008 from './0008_one_way_in.ts';
import * as m0009 from './0009_long_lines.ts';

/** The exchange schema's migrations, applied in name order. */
export const migrations: Record<string, Migration> = {
  '0001_exchange': m0001,
  '0002_delivery': m0002,
  '0003_starter_rules': m0003,
  '0004_mail_parameters': m0004,
  '0005_storing_index': m0005,
  '0006_lean_status_history': m0006,
  '0007_payload_pending': m0007,
  '0008_one_way_in': m0008,
  '0009_long_lines': m0009,
};
