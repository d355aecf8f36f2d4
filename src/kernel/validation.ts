import type { FastifySchemaValidationError } from 'fastify/types/schema.js';

/**
 * Turns Ajv's first validation error into a sentence that names the field the way a client wrote it
 * (`clusters[1].timeout`), rather than Ajv's JSON pointer (`/clusters/1/timeout`).
 */
export function formatValidationError(errors: FastifySchemaValidationError[], context?: string): string {
  const error = errors[0];
  if (!error) return 'Invalid request';
  const params = error.params as Record<string, unknown>;
  let path = fieldPath(error.instancePath);
  let problem = error.message ?? 'is invalid';
  if (error.keyword === 'required') {
    path = joinField(path, String(params.missingProperty));
    problem = 'is required';
  } else if (error.keyword === 'additionalProperties') {
    path = joinField(path, String(params.additionalProperty));
    problem = 'is not a known field';
  } else if (error.keyword === 'enum' && Array.isArray(params.allowedValues)) {
    problem = `must be one of ${params.allowedValues.map((value) => JSON.stringify(value)).join(', ')}`;
  } else if (error.keyword === 'const' || error.keyword === 'anyOf') {
    problem = 'has a value that is not allowed';
  }
  const where = path || (context === 'body' ? 'the request body' : (context ?? 'the request'));
  const prefix = context && context !== 'body' && path ? `${context} parameter ` : '';
  return `${prefix}${where} ${problem}`;
}

export function fieldPath(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, segment) => (/^\d+$/.test(segment) ? `${path}[${segment}]` : joinField(path, segment)), '');
}

function joinField(path: string, field: string): string {
  return path ? `${path}.${field}` : field;
}

/**
 * The field of a parsed JSON body whose string (or key) holds a NUL character, '' for the body itself,
 * undefined when there is none. PostgreSQL text and jsonb cannot store NUL, and no mail or header field
 * may carry it. Iterative, because a body may nest tens of thousands of levels deep.
 */
export function nulCharacterField(body: unknown): string | undefined {
  const pending: Array<[unknown, string]> = [[body, '']];
  while (pending.length > 0) {
    const [value, path] = pending.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return path;
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push([value[i], `${path}[${i}]`]);
    } else if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
      // Only what a JSON parser makes: a streamed body (a request the route reads itself) is not walked.
      for (const [key, item] of Object.entries(value)) {
        if (key.includes('\u0000')) return joinField(path, key);
        pending.push([item, joinField(path, key)]);
      }
    }
  }
  return undefined;
}
