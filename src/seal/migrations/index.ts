import type { Migration } from 'kysely';
import * as m0001 from './0001_seal.ts';

/** The seal schema's migrations, applied in name order. */
export const migrations: Record<string, Migration> = {
  '0001_seal': m0001,
};
