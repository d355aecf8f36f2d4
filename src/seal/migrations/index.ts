import type { Migration } from 'kysely';
import * as m0001 from './0001_seal.ts';
import * as m0002 from './0002_pin_states.ts';
import * as m0003 from './0003_recipient_language.ts';
import * as m0004 from './0004_recipient_lookup.ts';
import * as m0005 from './0005_message_end.ts';
import * as m0006 from './0006_trail.ts';
import * as m0007 from './0007_scrub.ts';
import * as m0008 from './0008_key_versions.ts';
import * as m0009 from './0009_contacts.ts';

/** The seal schema's migrations, applied in name order. */
export const migrations: Record<string, Migration> = {
  '0001_seal': m0001,
  '0002_pin_states': m0002,
  '0003_recipient_language': m0003,
  '0004_recipient_lookup': m0004,
  '0005_message_end': m0005,
  '0006_trail': m0006,
  '0007_scrub': m0007,
  '0008_key_versions': m0008,
  '0009_contacts': m0009,
};
