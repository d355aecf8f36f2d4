import { Type } from 'typebox';
import { requireBearer } from '../../kernel/bearer.ts';
import type { App } from '../../kernel/http.ts';
import type { Keyring } from '../crypto/keyring.ts';
import type { KeyStore, Rotation } from './key-store.ts';

export interface KeyRoutesOptions {
  store: KeyStore;
  keyring: Keyring;
  adminToken: string;
}

const err = Type.Ref('ErrorObject');

const RotationSchema = Type.Object({
  version: Type.Integer({ description: 'the version everything is re-wrapped under' }),
  state: Type.Union([Type.Literal('running'), Type.Literal('finished')]),
  requestedAt: Type.String({ format: 'date-time' }),
  finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  rewrapped: Type.Integer({ description: 'message keys and cluster passwords re-wrapped so far, by every instance' }),
});

const KeyStatusSchema = Type.Object(
  {
    current: Type.Integer({ description: 'the version that wraps new message keys and stored passwords' }),
    versions: Type.Array(
      Type.Object({
        version: Type.Integer(),
        configured: Type.Boolean({ description: 'false: wraps something, but this instance has no such version' }),
        source: Type.Union([
          Type.Literal('environment'),
          Type.Literal('file'),
          Type.Literal('generated'),
          Type.Literal('pkcs11'),
          Type.Null(),
        ]),
        variable: Type.Union([Type.String(), Type.Null()], { description: 'where the version is configured' }),
        messages: Type.Integer({ description: 'running message keys it wraps' }),
        clusterPasswords: Type.Integer({ description: 'stored cluster passwords it wraps' }),
        removable: Type.Boolean({ description: 'not current and wraps nothing: may leave the configuration' }),
      }),
    ),
    rotation: Type.Union([RotationSchema, Type.Null()], { description: 'the newest rotation asked for' }),
  },
  { title: 'Master key versions' },
);

/** The master key versions and their rotation (docs/operating.md#rotating-the-master-key). */
export async function keyRoutes(app: App, options: KeyRoutesOptions) {
  const onRequest = requireBearer(options.adminToken, 'admin');
  const { store, keyring } = options;

  const status = async () => {
    const remaining = await store.remaining();
    const configured = keyring.versions();
    const numbers = [...new Set([...configured.map((v) => v.version), ...remaining.map((r) => r.version)])].sort(
      (a, b) => a - b,
    );
    const rotation = await store.latestRotation();
    return {
      current: keyring.current,
      versions: numbers.map((version) => {
        const entry = configured.find((v) => v.version === version);
        const left = remaining.find((r) => r.version === version) ?? { messages: 0, clusterPasswords: 0 };
        return {
          version,
          configured: entry !== undefined,
          source: entry?.source ?? null,
          variable: entry?.variable ?? null,
          messages: left.messages,
          clusterPasswords: left.clusterPasswords,
          removable: version !== keyring.current && left.messages === 0 && left.clusterPasswords === 0,
        };
      }),
      rotation: rotation ? rotationView(rotation) : null,
    };
  };

  app.get(
    '/v1/admin/keys',
    {
      onRequest,
      schema: {
        tags: ['keys'],
        security: [{ adminToken: [] }],
        summary: 'Master key versions, what each still wraps, and the rotation',
        description:
          'Each master key version configured or still wrapping something: the running message keys and stored ' +
          'cluster passwords it wraps, and whether it may leave the configuration (not current, wraps nothing).',
        response: { 200: KeyStatusSchema, 401: err },
      },
    },
    status,
  );

  app.post(
    '/v1/admin/keys/rotate',
    {
      onRequest,
      schema: {
        tags: ['keys'],
        security: [{ adminToken: [] }],
        summary: 'Re-wrap everything under the current master key version',
        description:
          'Opens a rotation to the current version (SEAL_MASTER_KEY_VERSION, else the highest configured): in the ' +
          'background, at SEAL_KEY_REWRAP_RATE, one instance re-wraps every running message key and stored cluster ' +
          'password another version wraps; it goes on after a restart. Asking again while it runs changes nothing. ' +
          'Answers the status as GET /v1/admin/keys does.',
        response: { 202: KeyStatusSchema, 401: err },
      },
    },
    async (_request, reply) => {
      await store.requestRotation(keyring.current);
      return reply.code(202).send(await status());
    },
  );
}

function rotationView(rotation: Rotation) {
  return {
    version: rotation.version,
    state: rotation.finishedAt ? ('finished' as const) : ('running' as const),
    requestedAt: rotation.requestedAt.toISOString(),
    finishedAt: rotation.finishedAt?.toISOString() ?? null,
    rewrapped: rotation.rewrapped,
  };
}
