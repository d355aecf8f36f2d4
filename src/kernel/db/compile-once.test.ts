import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import { compileOnceWith } from './compile-once.ts';

interface Tables {
  items: { id: string; due: Date; state: string };
}

/** Compiles for PostgreSQL and runs nothing. */
const db = new Kysely<Tables>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (kysely) => new PostgresIntrospector(kysely),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

const dueItems = ({ now, limit }: { now: Date; limit: number }) =>
  db
    .with('first', (qc) => qc.selectFrom('items').select('id').where('due', '<', now).limit(limit))
    .selectFrom('items')
    .select('id')
    .where('state', '=', 'waiting')
    .where('due', '<=', now)
    .where('id', 'in', (qc) => qc.selectFrom('first').select('id'))
    .limit(limit);

describe('statements compiled once', () => {
  it('puts each value in every place its placeholder stood, and keeps the other parameters', () => {
    const statement = compileOnceWith(dueItems, { now: new Date(0), limit: 2 ** 31 - 7 });
    const now = new Date('2026-11-26T10:00:00Z');
    const first = statement({ now, limit: 5 });
    assert.equal(first.sql, dueItems({ now, limit: 5 }).compile().sql);
    assert.deepEqual(first.parameters, [now, 5, 'waiting', now, 5]);
    const later = new Date('2026-11-26T10:00:01Z');
    assert.deepEqual(statement({ now: later, limit: 7 }).parameters, [later, 7, 'waiting', later, 7]);
  });

  it('refuses placeholders that are not parameters of their own', () => {
    const same = new Date(0);
    const shared = compileOnceWith(({ a, b }: { a: Date; b: Date }) => dueItems({ now: a, limit: b.getTime() }), {
      a: same,
      b: same,
    });
    assert.throws(() => shared({ a: new Date(), b: new Date() }), /compileOnceWith/);
    const unused = compileOnceWith(({ now }: { now: Date; unused: string }) => dueItems({ now, limit: 1 }), {
      now: new Date(0),
      unused: 'never used',
    });
    assert.throws(() => unused({ now: new Date(), unused: 'x' }), /compileOnceWith/);
  });
});
