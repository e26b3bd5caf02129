/**
 * Bounded reading of a body stream, shared by the kit's client (answers) and its receiver
 * server (requests). Never keeps more than `max` bytes plus one chunk; never destroys the
 * stream (the caller decides: drain, close, or cut the connection).
 */
import type http from 'node:http';
import type { Readable } from 'node:stream';

/** A body longer than the cap it was read under. */
export class BodyTooLarge extends Error {
  constructor(readonly max: number) {
    super(`the body is more than ${max} bytes`);
    this.name = 'BodyTooLarge';
  }
}

export interface CollectOptions {
  /** Past `max`: resolve with the first `max` bytes (true) or reject with BodyTooLarge (default). */
  truncate?: boolean;
  /** The message whose 'close' before its end means the body was cut short (the request or the answer itself). */
  message: http.IncomingMessage;
  /** The error's text when `message` closes before its end. */
  closedWhy: string;
}

/** The whole body of `stream` (the message itself, or a decoder it is piped into), at most `max` bytes. */
export function collect(stream: Readable, max: number, o: CollectOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const end = (e: Error | null) => {
      if (done) return;
      done = true;
      if (e) {
        chunks.length = 0;
        reject(e);
      } else resolve(Buffer.concat(chunks, size).subarray(0, max));
    };
    stream.on('data', (c: Buffer) => {
      if (done) return;
      size += c.length;
      chunks.push(c);
      if (size > max) end(o.truncate ? null : new BodyTooLarge(max));
    });
    stream.on('end', () => end(null));
    stream.on('error', (e) => end(e));
    if (stream !== o.message) o.message.on('error', (e) => end(e));
    o.message.on('close', () => {
      if (!o.message.complete) end(new Error(o.closedWhy));
    });
  });
}
