import { Writable } from 'node:stream';

/**
 * A destination for a pino logger that keeps every line, parsed, in `lines`: tests read them to check
 * what is and is not logged.
 */
export function captureLogs(): { lines: Array<Record<string, unknown>>; stream: Writable } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, stream };
}
