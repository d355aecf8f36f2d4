/**
 * The auth service's API as its reader page (web/reader) sees it: the service validates and documents its
 * answers with these schemas, and the page takes its types from them (type-only imports, so the bundle
 * takes nothing of typebox). Types and schemas only, as in the other contracts; the page's type check
 * reads this file, so it needs nothing of Node either.
 */
import { Type } from 'typebox';

const Address = Type.Object({ name: Type.String(), address: Type.String() });
/** The answer of GET /v1/message: the sealed message as the reader page shows it. */
export const MessageResponse = Type.Object({
  id: Type.String(),
  subject: Type.String(),
  from: Type.Array(Address),
  to: Type.Array(Address),
  cc: Type.Array(Address),
  replyTo: Type.Array(Address),
  date: Type.Union([Type.String(), Type.Null()]),
  text: Type.Union([Type.String(), Type.Null()]),
  html: Type.Union([Type.String(), Type.Null()], { description: 'sanitised HTML body' }),
  remoteImages: Type.Integer({
    description: 'images from the internet in the HTML: left out, or with images=remote kept (https only)',
  }),
  attachments: Type.Array(
    Type.Object({
      index: Type.Integer(),
      filename: Type.String(),
      contentType: Type.String(),
      size: Type.Integer(),
      inline: Type.Boolean({
        description: 'sent inline (Content-Disposition: inline, or part of a multipart/related body)',
      }),
      embedded: Type.Boolean({
        description:
          'a picture the HTML body shows itself (cid: reference, ' +
          'written into `html` as a data: URL); everything else is a file to offer',
      }),
    }),
  ),
  seal: Type.Object({
    verified: Type.Boolean({ description: 'the seal service checked the SHA-256 of the content against the seal' }),
    cid: Type.String(),
    sha256: Type.String(),
    sealedAt: Type.String(),
    pins: Type.Array(
      Type.Object({ cluster: Type.String(), status: Type.String(), error: Type.Optional(Type.String()) }),
    ),
  }),
});
