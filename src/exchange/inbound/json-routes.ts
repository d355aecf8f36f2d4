import { Type } from 'typebox';
import { requireBearer } from '../../kernel/bearer.ts';
import type { App } from '../../kernel/http.ts';
import type { MessageIntake } from './accept.ts';
import { MessageAcceptedSchema, messageBodySchema, type InboundLimits } from '../../contracts/exchange.ts';
import { composeMessage } from './mime.ts';

/** Room in the request for JSON syntax, the text fields and the addresses around the base64 content. */
const BODY_OVERHEAD = 256 * 1024;

/**
 * JSON inbound (POST /v1/messages, docs/design.md#intake), the other door besides SMTP: service token, a
 * message built into MIME and stored like an SMTP one, 202 once payload and envelope are durable.
 */
export async function jsonInboundRoutes(
  app: App,
  options: { intake: MessageIntake; serviceToken: string; limits: InboundLimits },
) {
  const { intake, limits } = options;
  const body = messageBodySchema(limits);
  const error = Type.Ref('ErrorObject');

  app.post(
    '/v1/messages',
    {
      onRequest: requireBearer(options.serviceToken, 'service'),
      // base64 makes attachments and raw messages 4/3 of their size.
      bodyLimit: Math.ceil((limits.maxMessageSize * 4) / 3) + BODY_OVERHEAD,
      schema: {
        tags: ['messages'],
        summary: 'Submit a message (JSON inbound)',
        description:
          'Builds a MIME message from the structured fields (or takes `raw` as it is) and stores it ' +
          'like a message received over SMTP, on channel `json` with `from` as the envelope sender; ' +
          'to, cc and bcc are the envelope recipients. Answers 202 only once the payload ' +
          'and the envelope are stored. 400 (validation_failed) names what is wrong with the request, among ' +
          'it an X-Sealpost-Expires (`expires`, or the header of `raw`) that is malformed, past or given twice. ' +
          '503 when no delivery rule matches or storage is down ' +
          '(nothing is kept; try again), 413 when the message is larger than SMTP_MAX_MESSAGE_SIZE.',
        security: [{ serviceToken: [] }],
        body,
        response: { 202: MessageAcceptedSchema, 400: error, 401: error, 413: error, 503: error },
      },
    },
    async (request, reply) => {
      const message = composeMessage(request.body, limits);
      const accepted = await intake.accept({ channel: 'json', ...message }).catch((failure: unknown) => {
        // Refused before the store read it all (no rule, store down): stop building the rest.
        if (!Buffer.isBuffer(message.payload)) message.payload.destroy();
        throw failure;
      });
      request.log.info(
        {
          envelopeId: accepted.envelopeId,
          sender: message.sender,
          recipients: message.recipients.length,
          size: accepted.size,
          outbound: accepted.outbound,
          ...(accepted.parts ? { parts: accepted.parts } : {}),
        },
        'message accepted over JSON',
      );
      return reply
        .code(202)
        .header('location', `/v1/messages/${accepted.envelopeId}/status`)
        .send({
          id: accepted.envelopeId,
          status: 'accepted' as const,
          ...(accepted.parts ? { parts: accepted.parts.map((part) => part.envelopeId) } : {}),
        });
    },
  );
}
