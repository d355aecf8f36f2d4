import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AppError } from './errors.ts';

/**
 * A preHandler that admits requests carrying `Authorization: Bearer <token>`. Both sides are hashed
 * first so that the comparison is constant-time whatever the lengths (timingSafeEqual needs equal sizes).
 */
export function requireBearer(expected: string, what: 'admin' | 'service') {
  const expectedDigest = digest(expected);
  return async (request: FastifyRequest) => {
    const header = request.headers.authorization;
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) {
      throw new AppError(
        'unauthenticated',
        401,
        `This endpoint needs the ${what} token: Authorization: Bearer <token>`,
        {
          headers: { 'www-authenticate': 'Bearer' },
        },
      );
    }
    if (!timingSafeEqual(digest(match[1]!), expectedDigest)) {
      throw new AppError('unauthenticated', 401, `The ${what} token is not valid`, {
        headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
      });
    }
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
