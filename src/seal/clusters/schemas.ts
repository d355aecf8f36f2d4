import { Type, type Static } from 'typebox';

/**
 * The IPFS cluster configuration (docs/specification.md#ipfs-cluster-configuration): field names, types and
 * defaults are the specification's. Every object refuses unknown fields, so a typo (`timout`) is a 400 rather
 * than a silently ignored setting. What JSON Schema cannot say (host syntax, port range, a Go duration, user
 * and pass together) is checked in config.ts with the same field naming.
 */
export const AddParamsSchema = Type.Object(
  {
    local: Type.Optional(Type.Boolean({ description: 'sent as `local`' })),
    recursive: Type.Optional(Type.Boolean({ description: 'sent as `recursive`' })),
    hidden: Type.Optional(Type.Boolean({ description: 'sent as `hidden`' })),
    wrap: Type.Optional(Type.Boolean({ description: 'sent as `wrap-with-directory` (the name the cluster reads)' })),
    shard: Type.Optional(Type.Boolean({ description: 'sent as `shard`' })),
    streamChannels: Type.Optional(
      Type.Boolean({
        description: 'sent as `stream-channels`; the cluster defaults to true (newline-delimited answer)',
      }),
    ),
    noPin: Type.Optional(
      Type.Boolean({
        description:
          'sent as `no-pin`: the file is left unpinned when added; default false. ' +
          'It is pinned right after anyway (POST /pins on every cluster)',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'parameters of `POST /add` on the primary cluster; only the fields given are sent',
  },
);

export const PinParamsSchema = Type.Object(
  {
    replicationFactorMin: Type.Optional(
      Type.Integer({
        minimum: -1,
        maximum: 2147483647,
        description: 'sent as `replication-min`; 0 is the cluster default, -1 everywhere',
      }),
    ),
    replicationFactorMax: Type.Optional(
      Type.Integer({
        minimum: -1,
        maximum: 2147483647,
        description: 'sent as `replication-max`; 0 is the cluster default, -1 everywhere',
      }),
    ),
    name: Type.Optional(Type.String({ maxLength: 1000, description: 'sent as `name`' })),
    expireIn: Type.Optional(
      Type.String({
        maxLength: 100,
        description:
          'sent as `expire-in` when it is a valid duration string of at least 60s; below 60s, ' +
          'missing or not a valid duration string it is not sent and the pin never expires ' +
          '(docs/specification.md#ipfs-cluster-configuration). Stored as given.',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'parameters of `POST /pins/{cid}` on this cluster; only the fields given are sent',
  },
);

export const ClusterInputSchema = Type.Object(
  {
    host: Type.String({
      minLength: 1,
      maxLength: 253,
      description: 'host name or IP address of the cluster REST API; no scheme, port or path',
    }),
    port: Type.Optional(
      // No JSON type here: a string (the spec's type) or a number, checked with its own message in config.ts.
      Type.Unsafe<string | number>({
        description: 'REST API port 1-65535, a string (a JSON number is accepted too); default "9094"',
      }),
    ),
    user: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        description:
          'Basic auth user; needs pass. Sent on every REST API call; sent to the plain-HTTP IPFS proxy ' +
          "(reads) only when secure is false, so a secure cluster's password never travels unencrypted",
      }),
    ),
    pass: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1000,
        description: 'Basic auth password; needs user; stored encrypted with SEAL_MASTER_KEY, never shown again',
      }),
    ),
    secure: Type.Optional(
      Type.Boolean({
        description:
          'HTTPS to the REST API; default true. Reads go through the IPFS proxy ' +
          "(ipfsApi) in plain HTTP whatever this says, since IPFS Cluster's " +
          'proxy has no TLS; with secure true the credentials are not sent there unless ipfsApi is https',
      }),
    ),
    timeout: Type.Optional(
      Type.String({
        maxLength: 100,
        description: 'time limit of every call to this cluster, a duration string from 100ms to 10m; default "30s"',
      }),
    ),
    addParams: Type.Optional(AddParamsSchema),
    pinParams: Type.Optional(PinParamsSchema),
    ipfsApi: Type.Optional(
      Type.String({
        maxLength: 300,
        description:
          "this cluster's IPFS API (the peer's IPFS proxy), which reads and the scrub go to, as http://host:port " +
          '(https:// when a TLS front serves it); default: the cluster host on IPFS_PROXY_PORT. ' +
          'Not in the specification: an addition of this service',
      }),
    ),
  },
  { additionalProperties: false, title: 'IPFS cluster' },
);

export const ClusterConfigBodySchema = Type.Object(
  {
    clusters: Type.Array(ClusterInputSchema, {
      minItems: 1,
      maxItems: 20,
      description: 'order matters: the first cluster is the primary (files are added there); every cluster pins',
    }),
  },
  { additionalProperties: false, title: 'IPFS cluster configuration' },
);
export type ClusterConfigBody = Static<typeof ClusterConfigBodySchema>;
export type AddParams = Static<typeof AddParamsSchema>;
export type PinParams = Static<typeof PinParamsSchema>;

/** A cluster as shown by the API: defaults filled in, the password replaced by "[redacted]". */
export const ClusterViewSchema = Type.Object(
  {
    host: Type.String(),
    port: Type.String(),
    user: Type.Optional(Type.String()),
    pass: Type.Optional(Type.Literal('[redacted]')),
    secure: Type.Boolean(),
    timeout: Type.String(),
    addParams: Type.Optional(AddParamsSchema),
    pinParams: Type.Optional(PinParamsSchema),
    ipfsApi: Type.Optional(Type.String()),
  },
  { title: 'IPFS cluster (redacted)' },
);

export const StoredConfigSchema = Type.Object({
  clusters: Type.Array(ClusterViewSchema),
  storedAt: Type.String({ format: 'date-time' }),
});

export const ConfigStoredResponseSchema = Type.Object(
  {
    clusters: Type.Array(ClusterViewSchema),
    storedAt: Type.String({ format: 'date-time' }),
    restartRequired: Type.Boolean({
      description: 'whether the stored configuration differs from the one this instance runs with',
    }),
    message: Type.String(),
  },
  { title: 'Stored IPFS cluster configuration' },
);

export const ConfigStateSchema = Type.Object(
  {
    inForce: Type.Object({
      source: Type.Union([Type.Literal('stored'), Type.Literal('environment')], {
        description:
          '`stored`: read from the database at start; `environment`: the IPFS_CLUSTER_* variables (nothing was stored)',
      }),
      clusters: Type.Array(ClusterViewSchema),
    }),
    stored: Type.Union([StoredConfigSchema, Type.Null()], {
      description: 'the latest configuration stored through POST; null when none was',
    }),
    restartRequired: Type.Boolean({
      description: 'the stored configuration differs from the one in force: restart every instance to apply it',
    }),
  },
  { title: 'IPFS cluster configuration state' },
);
