import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/**
 * A bare SMTP client for tests that need to see the protocol itself: every reply as the server wrote
 * it, commands a library would never send (bad addresses, no SIZE parameter, one recipient too many),
 * a message left half-sent. `reply()` waits for one complete (possibly multi-line) reply.
 */
export class SmtpTalk {
  private buffer = '';
  private closed = false;
  private waiters: Array<() => void> = [];

  private constructor(private socket: Socket) {
    this.listen(socket);
  }

  private listen(socket: Socket): void {
    socket.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString('utf8');
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => {});
  }

  /**
   * Connects and returns once the greeting (or a refusal such as 421) has arrived. `localAddress` binds
   * the client to another loopback address (127.0.0.2), to play a client outside the allowed networks.
   */
  static async open(
    port: number,
    host = '127.0.0.1',
    localAddress?: string,
  ): Promise<{ talk: SmtpTalk; greeting: string }> {
    const socket = connect({ port, host, ...(localAddress ? { localAddress } : {}) });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const talk = new SmtpTalk(socket);
    return { talk, greeting: await talk.reply() };
  }

  /** Sends one command line and returns its reply. */
  async send(line: string): Promise<string> {
    this.write(`${line}\r\n`);
    return this.reply();
  }

  /** STARTTLS, then the TLS handshake on the same connection (trusting `ca`); returns the 220 reply. */
  async startTls(ca: string): Promise<string> {
    const reply = await this.send('STARTTLS');
    if (!reply.startsWith('220')) return reply;
    const plain = this.socket;
    plain.removeAllListeners('data');
    plain.removeAllListeners('close');
    const secure = tlsConnect({ socket: plain, ca: [ca], servername: 'localhost' });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', resolve);
      secure.once('error', reject);
    });
    this.socket = secure;
    this.listen(secure);
    return reply;
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** The next complete reply: `250-...` lines up to the `250 ...` line, joined by \n. */
  async reply(): Promise<string> {
    for (;;) {
      const match = /^(?:\d{3}-[^\r\n]*\r\n)*\d{3}(?: [^\r\n]*)?\r\n/.exec(this.buffer);
      if (match) {
        this.buffer = this.buffer.slice(match[0].length);
        return match[0].trimEnd().replace(/\r\n/g, '\n');
      }
      if (this.closed) throw new Error(`connection closed before a complete reply; got ${JSON.stringify(this.buffer)}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Resolves once the server has closed the connection. */
  async closedByServer(): Promise<void> {
    while (!this.closed) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  close(): void {
    this.socket.destroy();
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}
