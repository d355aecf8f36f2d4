import { Type } from 'typebox';
import {
  ConfirmedMobileBodySchema,
  ConfirmedMobileSchema,
  RecipientLookupParams,
  RecipientNumbersBodySchema,
  RecipientNumbersSchema,
} from '../../contracts/seal.ts';
import { requireBearer } from '../../kernel/bearer.ts';
import { normalizeEmail } from '../../kernel/email.ts';
import { AppError, notFound } from '../../kernel/errors.ts';
import type { App } from '../../kernel/http.ts';
import { LANGUAGES } from '../../kernel/languages.ts';
import { normalizeMobile } from '../../kernel/mobile.ts';
import type { ContactStore } from './contact-store.ts';
import { csvRows, importContacts, jsonRows, REFUSED_LISTED } from './import.ts';

export interface ContactRoutesOptions {
  store: ContactStore;
  adminToken: string;
  serviceToken: string;
}

/** A JSON import holds its body in memory: larger directories come as CSV, which is streamed. */
export const JSON_IMPORT_MAX = 10_000;

const err = Type.Ref('ErrorObject');

/** Fields are checked row by row (a bad row is reported, the others kept), so the schema only bounds them. */
const ContactBody = Type.Object(
  {
    email: Type.Optional(Type.String({ maxLength: 320 })),
    mobile: Type.Optional(Type.String({ maxLength: 64, description: 'international form; normalised to E.164' })),
    language: Type.Optional(Type.String({ maxLength: 35, description: 'en, de, fr or it (a tag such as de-CH: de)' })),
  },
  { additionalProperties: false },
);

const RefusedRowSchema = Type.Object({
  line: Type.Integer({ description: 'the CSV line (the header is line 1), or the position in the JSON array from 1' }),
  email: Type.Optional(Type.String()),
  reason: Type.String(),
});

const ImportAnswer = Type.Object(
  {
    imported: Type.Integer({ description: 'rows written (added or replaced)' }),
    refusedCount: Type.Integer({ description: 'rows refused' }),
    refused: Type.Array(RefusedRowSchema, { description: `the refused rows, the first ${REFUSED_LISTED}` }),
  },
  { title: 'Contacts import' },
);

const ContactSchema = Type.Object(
  {
    email: Type.String(),
    mobile: Type.Optional(Type.String({ description: "the directory's number (E.164)" })),
    language: Type.Optional(Type.Enum([...LANGUAGES])),
    updatedAt: Type.Optional(Type.String({ format: 'date-time' })),
    confirmed: Type.Optional(
      Type.Object(
        { mobile: Type.String(), confirmedAt: Type.String({ format: 'date-time' }) },
        { description: 'the number the recipient confirmed since; it wins over the directory' },
      ),
    ),
    applies: Type.Optional(
      Type.Union([Type.Literal('confirmed'), Type.Literal('directory')], {
        description: 'the source a message without a header number would use for this address',
      }),
    ),
  },
  { title: 'Contact' },
);

/** The address of a path, as the directory keys it; a 400 when it is none. */
function emailKeyOf(email: string): string {
  const normalized = normalizeEmail(email);
  if (!normalized) throw new AppError('invalid_email', 400, `${JSON.stringify(email)} is not a valid email address`);
  return normalized.toLowerCase();
}

/**
 * The contacts directory (admin) and the numbers recipients confirmed (service): docs/specification.md#contacts.
 */
export async function contactRoutes(app: App, options: ContactRoutesOptions) {
  const { store } = options;
  const admin = requireBearer(options.adminToken, 'admin');
  const service = requireBearer(options.serviceToken, 'service');

  // A CSV import reaches the handler as the request stream itself, read row by row: nothing holds the file.
  app.addContentTypeParser('text/csv', (_request, payload, done) => done(null, payload));

  app.post(
    '/v1/admin/contacts',
    {
      onRequest: admin,
      bodyLimit: 8 * 1024 * 1024,
      schema: {
        tags: ['contacts'],
        security: [{ adminToken: [] }],
        summary: 'Import contacts: a mobile number and a language per recipient address (upsert)',
        description:
          'JSON `[{email, mobile, language?}]` (at most 10,000), or `Content-Type: text/csv` with a header line ' +
          'naming the columns email, mobile and, optionally, language, streamed (no size limit). Every row is ' +
          'checked: the address as the intake checks recipients, the number in E.164 after normalisation, the ' +
          'language one of en, de, fr, it. Bad rows are listed with their line and the good ones kept; with ' +
          '`?allOrNothing=true` one bad row refuses the import (400, nothing written). An address imported again ' +
          'is replaced.',
        querystring: Type.Object(
          {
            allOrNothing: Type.Optional(
              Type.Union([Type.Literal('true'), Type.Literal('false')], {
                description: 'true: refuse the whole import if a row is bad',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        body: {
          content: {
            'application/json': { schema: Type.Array(ContactBody, { maxItems: JSON_IMPORT_MAX }) },
            'text/csv': { schema: { description: 'email,mobile,language then one contact per line' } },
          },
        },
        response: { 200: ImportAnswer, 400: err, 401: err, 413: err, 415: err },
      },
    },
    async (request) => {
      const allOrNothing = request.query.allOrNothing === 'true';
      const media = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      const rows =
        media === 'text/csv'
          ? csvRows(request.raw)
          : jsonRows(request.body as Array<{ email?: string; mobile?: string; language?: string }>);
      const outcome = await importContacts(store, rows, { allOrNothing });
      request.log.info(
        { imported: outcome.imported, refused: outcome.refusedCount, format: media, allOrNothing },
        'contacts imported',
      );
      return outcome;
    },
  );

  app.get(
    '/v1/admin/contacts/:email',
    {
      onRequest: admin,
      schema: {
        tags: ['contacts'],
        security: [{ adminToken: [] }],
        summary: "One address's directory entry, and the number the recipient confirmed",
        params: RecipientLookupParams,
        response: { 200: ContactSchema, 400: err, 401: err, 404: err },
      },
    },
    async (request) => {
      const key = emailKeyOf(request.params.email);
      const [contact, confirmed] = await Promise.all([store.get(key), store.confirmed(key)]);
      if (!contact && !confirmed) throw notFound(`No contact ${request.params.email}`);
      return {
        email: contact?.email ?? confirmed!.email,
        ...(contact
          ? {
              mobile: contact.mobile,
              ...(contact.language ? { language: contact.language } : {}),
              updatedAt: contact.updated_at.toISOString(),
            }
          : {}),
        ...(confirmed
          ? { confirmed: { mobile: confirmed.mobile, confirmedAt: confirmed.confirmedAt.toISOString() } }
          : {}),
        applies: confirmed ? ('confirmed' as const) : ('directory' as const),
      };
    },
  );

  app.delete(
    '/v1/admin/contacts/:email',
    {
      onRequest: admin,
      schema: {
        tags: ['contacts'],
        security: [{ adminToken: [] }],
        summary: "Remove an address's directory entry; 204",
        description:
          'The number the recipient confirmed themselves stays (it is theirs, not the directory’s); messages ' +
          'already sealed keep the number they were sealed with.',
        params: RecipientLookupParams,
        response: { 204: Type.Null(), 400: err, 401: err, 404: err },
      },
    },
    async (request, reply) => {
      if (!(await store.delete(emailKeyOf(request.params.email)))) throw notFound(`No contact ${request.params.email}`);
      return reply.code(204).send(null);
    },
  );

  app.put(
    '/v1/recipients/:email/mobile',
    {
      onRequest: service,
      schema: {
        tags: ['contacts'],
        security: [{ serviceToken: [] }],
        summary: 'Record the number a recipient proved; it applies to their later messages',
        description:
          'The auth service calls this when a recipient confirmed a mobile change or added a number with a code ' +
          'sent to it. Messages sealed from now on without a header number for the address use it (before the ' +
          'directory), and so do those whose header names the number it `replaces`; messages already sealed are ' +
          'unchanged.',
        params: RecipientLookupParams,
        body: ConfirmedMobileBodySchema,
        response: { 200: ConfirmedMobileSchema, 400: err, 401: err },
      },
    },
    async (request) => {
      const email = normalizeEmail(request.params.email);
      if (!email)
        throw new AppError('invalid_email', 400, `${JSON.stringify(request.params.email)} is not a valid address`);
      const mobile = normalizeMobile(request.body.mobile);
      if (!mobile) throw new AppError('invalid_mobile', 400, `${JSON.stringify(request.body.mobile)} is not valid`);
      const replaces = request.body.replaces === undefined ? null : (normalizeMobile(request.body.replaces) ?? null);
      const confirmed = await store.confirm(email, mobile, request.body.messageId ?? null, replaces);
      request.log.info({ confirmedOn: confirmed.confirmedOn }, 'a recipient confirmed a number for later messages');
      return { email: confirmed.email, mobile: confirmed.mobile, confirmedAt: confirmed.confirmedAt.toISOString() };
    },
  );

  app.post(
    '/v1/recipients/numbers',
    {
      onRequest: service,
      schema: {
        tags: ['contacts'],
        security: [{ serviceToken: [] }],
        summary: 'Which recipients have a number on record (confirmed or in the directory), without the numbers',
        description:
          'The exchange asks this once per message under SIGN_IN_REQUIRE_SMS, for the recipients the sender ' +
          'gave no number for. An address that is not valid answers with no source.',
        body: RecipientNumbersBodySchema,
        response: { 200: RecipientNumbersSchema, 400: err, 401: err },
      },
    },
    async (request) => {
      const keys = request.body.recipients.map((email) => normalizeEmail(email)?.toLowerCase());
      const found = await store.onRecord([...new Set(keys.filter((key) => key !== undefined))]);
      return {
        recipients: request.body.recipients.map((email, index) => {
          const record = keys[index] === undefined ? undefined : found.get(keys[index]!);
          const source = record?.confirmed ? 'confirmed' : record?.directory ? 'directory' : undefined;
          return { email, ...(source ? { mobileSource: source } : {}) };
        }),
      };
    },
  );
}
