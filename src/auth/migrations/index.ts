import type { Migration } from 'kysely';
import * as m0001 from './0001_auth.ts';
import * as m0002 from './0002_replies.ts';
import * as m0003 from './0003_code_refusals.ts';
import * as m0004 from './0004_draft_versions.ts';
import * as m0005 from './0005_session_factors.ts';
import * as m0006 from './0006_session_changes.ts';
import * as m0007 from './0007_session_sender.ts';
import * as m0008 from './0008_reply_sent.ts';
import * as m0009 from './0009_replaced_codes.ts';
import * as m0010 from './0010_sessions_before_factors.ts';

/** The auth schema's migrations, applied in name order. */
export const migrations: Record<string, Migration> = {
  '0001_auth': m0001,
  '0002_replies': m0002,
  '0003_code_refusals': m0003,
  '0004_draft_versions': m0004,
  '0005_session_factors': m0005,
  '0006_session_changes': m0006,
  '0007_session_sender': m0007,
  '0008_reply_sent': m0008,
  '0009_replaced_codes': m0009,
  '0010_sessions_before_factors': m0010,
};
