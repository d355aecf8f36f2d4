import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import DataStream from 'nodemailer/lib/smtp-connection/data-stream';
import {
  dotStuffingFlush,
  dotStuffingTransform,
  installDotStuffing,
  libraryFlush,
  libraryTransform,
} from './dot-stuffing.ts';

type DataStreamFunctions = { _transform: typeof libraryTransform; _flush: typeof libraryFlush };
const LIBRARY: DataStreamFunctions = { _transform: libraryTransform, _flush: libraryFlush };
const OURS: DataStreamFunctions = { _transform: dotStuffingTransform, _flush: dotStuffingFlush };

/** Everything a DataStream writes for these chunks, with nodemailer's functions or ours. */
function written(chunks: Array<Buffer | string>, functions: DataStreamFunctions) {
  const stream = new DataStream() as unknown as DataStream & { inByteCount: number; outByteCount: number };
  Object.assign(stream, functions);
  const out: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => out.push(chunk));
  for (const chunk of chunks) stream.write(chunk);
  stream.end();
  return { bytes: Buffer.concat(out), inBytes: stream.inByteCount, outBytes: stream.outByteCount };
}

/** A seeded generator (mulberry32), so that a failure can be replayed. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('dot-stuffing of the DATA stream', () => {
  it('writes what nodemailer writes for CRLF mail, dots at line starts, bare CR and LF', () => {
    const cases = [
      'a\r\n.b\r\n..\r\n.\r\nend\r\n',
      '.first line starts with a dot\r\n',
      'bare\nLF\n.dot after bare LF\n',
      'bare\rCR\r.dot after bare CR\r\rtwo\r',
      '\n\r\r\n\n..\r.',
      '',
    ];
    for (const text of cases) {
      for (const chunks of [[text], [...text], [Buffer.from(text)]]) {
        const input = chunks.filter((chunk) => chunk.length > 0);
        assert.deepEqual(written(input, OURS), written(input, LIBRARY), JSON.stringify(text));
      }
    }
  });

  it('writes what nodemailer writes for random bytes in random chunks', () => {
    const alphabet = [0x0d, 0x0a, 0x2e, 0x61, 0x20];
    for (let seed = 1; seed <= 500; seed++) {
      const next = random(seed);
      const message = Buffer.from(
        Array.from({ length: Math.floor(next() * 200) }, () => alphabet[Math.floor(next() * 5)]!),
      );
      const chunks: Buffer[] = [];
      for (let at = 0; at < message.length; ) {
        const size = 1 + Math.floor(next() * 40);
        chunks.push(message.subarray(at, at + size));
        at += size;
      }
      assert.deepEqual(
        written(chunks, OURS),
        written(chunks, LIBRARY),
        `seed ${seed}: ${JSON.stringify(message.toString('latin1'))}`,
      );
    }
  });

  it('writes a message held in memory, its end included, as one chunk', () => {
    const stream = Object.assign(new DataStream(), OURS);
    const out: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => out.push(chunk));
    stream.end(Buffer.from('Subject: one write\r\n\r\n.hidden dot\r\n'));
    assert.deepEqual(
      out.map((chunk) => chunk.toString()),
      ['Subject: one write\r\n\r\n..hidden dot\r\n.\r\n'],
    );
  });

  it('is what every DataStream of the process runs once installed', () => {
    installDotStuffing();
    const stream = new DataStream() as unknown as DataStreamFunctions;
    assert.equal(stream._transform, dotStuffingTransform);
    assert.equal(stream._flush, dotStuffingFlush);
  });
});
