/**
 * What every browser test of the reader page runs against: an SMS capture, an SMTP sink, Sealpost as a
 * child process (`start all`, codes by SMS to the capture, mail to the sink, delivery polled every
 * 100 ms, no wait between two codes) and Chromium; started before the suite's tests, stopped after them.
 */
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { buildReader } from '../../scripts/build-reader.ts';
import { startSealpostProcess, type SealpostProcess } from './sealpost-process.ts';
import { startSmsCapture, type SmsCapture } from './sms-capture.ts';
import { startSmtpSink, type SmtpSink } from './smtp-sink.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking'];

export interface ReaderStack {
  sms: SmsCapture;
  sink: SmtpSink;
  sealpost: SealpostProcess;
  browser: Browser;
  dataDir: string;
}

/** Registers the suite's hooks; the stack is there once its `before` has run. `env` adds or overrides. */
export function useReaderStack(name: string, env: Record<string, string> = {}): ReaderStack {
  const stack = {} as ReaderStack;
  before(async () => {
    await buildReader();
    stack.sms = await startSmsCapture();
    stack.sink = await startSmtpSink();
    stack.dataDir = await mkdtemp(join(tmpdir(), `sealpost-${name}-`));
    stack.sealpost = await startSealpostProcess(
      {
        SEALPOST_DATA_DIR: stack.dataDir,
        SMS_PROVIDER: 'http',
        SMS_PROVIDER_URL: `${stack.sms.url}/sms`,
        OUTBOUND_SMTP_URL: stack.sink.url,
        DELIVERY_POLL_INTERVAL: '100ms',
        SMS_LIMIT_NUMBER_INTERVAL: '0s',
        ...env,
      },
      { timeoutMs: 120_000 },
    );
    stack.browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });
  after(async () => {
    const browser = stack.browser?.close();
    // Stopped while Chromium still holds its connections (some never used): a graceful stop must not
    // wait for them, and ends with status 0.
    const code = await stack.sealpost?.stop();
    await browser;
    await stack.sink?.close();
    await stack.sms?.close();
    if (stack.dataDir) await rm(stack.dataDir, { recursive: true, force: true });
    if (stack.sealpost)
      assert.equal(code, 0, `sealpost stopped with ${code}:\n${stack.sealpost.stdout().slice(-2000)}`);
  });
  return stack;
}
