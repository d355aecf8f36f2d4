import { Readable } from 'node:stream';

/**
 * Reads `stream` whole when it ends within `limit` bytes; past that, a stream that replays what was read
 * and then the rest (errors of the source included), so a large message is still streamed, never held.
 */
export function readUpTo(stream: Readable, limit: number): Promise<Buffer | Readable> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size <= limit) return;
      cleanup();
      stream.pause();
      resolve(replay(chunks, stream));
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
  });
}

function replay(head: Buffer[], rest: Readable): Readable {
  // An async generator keeps the backpressure on `rest` and passes its error on.
  return Readable.from(
    (async function* () {
      yield* head;
      for await (const chunk of rest) yield chunk as Buffer;
    })(),
  );
}

/**
 * Collects `stream` when it ends within `limit` bytes; past that the stream is destroyed and the answer is
 * undefined, so nothing larger than `limit` is ever held. The stream's errors reject.
 */
export async function collectUpTo(stream: Readable, limit: number): Promise<Buffer | undefined> {
  const read = await readUpTo(stream, limit);
  if (Buffer.isBuffer(read)) return read;
  // The replay has not started reading the source: both go.
  read.destroy();
  stream.destroy();
  return undefined;
}
