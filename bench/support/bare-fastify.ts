// The baseline for the auth service: bare Fastify routes on the same paths, answering JSON of about the
// same size without any work behind them (no session, no database, no logging, no hooks). Run as its
// own process like the service: `bare-fastify.ts PORT`.
import Fastify from 'fastify';

const port = Number(process.argv[2]);
const app = Fastify({ logger: false });

app.get('/v1/config', async (_request, reply) => {
  reply.header('x-csrf-token', 'bare-token-0123456789abcdef0123456789abcdef');
  return {
    signedIn: false,
    codeLength: 6,
    codeExpiresIn: 900,
    maxAttempts: 5,
    rememberMeMaxAge: 2592000,
    limits: { perNumberInterval: 60, perNumberHourly: 5, perIpHourly: 20 },
  };
});
app.post('/v1/auth/code', async () => ({ method: 'sms', codeLength: 6, expiresIn: 900 }));
app.post('/v1/auth/verify', async (_request, reply) => {
  reply.header('x-csrf-token', 'bare-token-0123456789abcdef0123456789abcdef');
  return {
    signedIn: true,
    messageId: 'bare',
    email: 'bare@example.com',
    rememberMe: false,
    expiresAt: new Date().toISOString(),
  };
});

await app.listen({ port, host: '127.0.0.1' });
process.stdout.write('ready\n');
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
