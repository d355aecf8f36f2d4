import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, prettyDetails, REDACTED, redactSecrets } from './logger.ts';

/** A logger at info level whose lines are parsed into `lines`. */
function capture() {
  const lines: Record<string, any>[] = [];
  const logger = createLogger(
    { level: 'info', name: 'test' },
    { write: (line: string) => lines.push(JSON.parse(line)) },
  );
  return { logger, lines };
}

describe('log lines', () => {
  it('blank secrets at the top of a line, one level down and in request headers, and keep the rest', () => {
    const { logger, lines } = capture();
    const user = { name: 'alice', password: 'hunter2' };
    logger.info(
      {
        password: 'p1',
        token: 't1',
        code: '123456',
        secret: 's1',
        user,
        session: { sessionId: 'sid', expires: 3 },
        s3: { secretAccessKey: 'k', bucket: 'b' },
        cluster: { pass: 'cp', url: 'http://127.0.0.1:9094' },
        req: { method: 'POST', headers: { authorization: 'Bearer x', cookie: 'sid=1', 'x-csrf-token': 'c' } },
        res: { headers: { 'set-cookie': 'sid=2' } },
        outbound: ['smtp'],
      },
      'secrets',
    );
    const [line] = lines;
    for (const key of ['password', 'token', 'code', 'secret']) assert.equal(line![key], REDACTED, key);
    assert.deepEqual(line!.user, { name: 'alice', password: REDACTED });
    assert.deepEqual(line!.session, { sessionId: REDACTED, expires: 3 });
    assert.deepEqual(line!.s3, { secretAccessKey: REDACTED, bucket: 'b' });
    assert.deepEqual(line!.cluster, { pass: REDACTED, url: 'http://127.0.0.1:9094' });
    assert.deepEqual(line!.req.headers, { authorization: REDACTED, cookie: REDACTED, 'x-csrf-token': REDACTED });
    assert.equal(line!.req.method, 'POST');
    assert.deepEqual(line!.res.headers, { 'set-cookie': REDACTED });
    assert.deepEqual(line!.outbound, ['smtp']);
    assert.equal(user.password, 'hunter2', "the caller's object is not changed");
  });

  it("keep an error's code, message and stack, and blank its secrets", () => {
    const { logger, lines } = capture();
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
      code: 'ECONNREFUSED',
      token: 'in an error',
    });
    logger.warn({ err }, 'database down');
    const logged = lines[0]!.err;
    assert.equal(logged.code, 'ECONNREFUSED');
    assert.equal(logged.message, 'connect ECONNREFUSED 127.0.0.1:5432');
    assert.equal(logged.type, 'Error');
    assert.match(logged.stack, /^Error: connect ECONNREFUSED/);
    assert.equal(logged.token, REDACTED);
    assert.equal(err.token, 'in an error', "the caller's error is not changed");
  });

  it("blank secrets in a child logger's bindings", () => {
    const { logger, lines } = capture();
    logger.child({ token: 'bound', component: 'x' }).info('bound');
    assert.equal(lines[0]!.token, REDACTED);
    assert.equal(lines[0]!.component, 'x');
  });

  it('leave a line without secrets as it was, without a copy', () => {
    const fields = { envelopeId: 'e', sender: 'a@example.com', size: 10, outbound: ['smtp'], err: new Error('x') };
    assert.equal(redactSecrets(fields), fields);
  });
});

describe('prettyDetails (the details of a terminal line)', () => {
  it('writes key=value pairs on one line: bare words, quoted text, lists, objects one level down, errors', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    assert.equal(
      prettyDetails({
        level: 30,
        time: 1,
        msg: 'hidden',
        pid: 7,
        reqId: 'r',
        service: 'exchange',
        networks: ['127.0.0.0/8', '::1/128'],
        auth: false,
        reason: 'relay answered 451 4.3.0 try later',
        req: { method: 'GET', url: '/v1/config' },
        err: { type: 'Error', message: err.message, stack: err.stack, code: err.code },
      }),
      'service=exchange networks=127.0.0.0/8,::1/128 auth=false reason="relay answered 451 4.3.0 try later" ' +
        'req.method=GET req.url=/v1/config err="connect ECONNREFUSED 127.0.0.1:5432" err.code=ECONNREFUSED',
    );
    assert.doesNotMatch(prettyDetails({ text: 'two\nlines' }), /\n/);
  });
});

describe('prettyDetails of nested values', () => {
  it('writes objects inside a value as (key=value …), never as JSON', () => {
    assert.equal(
      prettyDetails({ clusters: [{ host: '127.0.0.1', port: '9094', secure: false }], limits: { size: { max: 1 } } }),
      'clusters=(host=127.0.0.1 port=9094 secure=false) limits.size=(max=1)',
    );
  });
});
