import { randomBytes } from 'node:crypto';
import { readOrCreateSecretFile } from '../kernel/secret-file.ts';
import type { Config } from './config.ts';

/** The files of the data folder that keep generated tokens; `sealpost queue` reads admin-token too. */
export const TOKEN_FILES = { ADMIN_TOKEN: 'admin-token', SERVICE_TOKEN: 'service-token' } as const;

/**
 * Outside production an unset ADMIN_TOKEN or SERVICE_TOKEN is generated once into the data folder and
 * read back by every later start on it: services started as separate processes on one data folder
 * (`sealpost start seal`, `start exchange`, `start auth`) then hold the same tokens and can call each
 * other, where each used to draw its own. Returns the configuration with those tokens and their files.
 */
export async function shareGeneratedTokens(config: Config): Promise<{ config: Config; files: Record<string, string> }> {
  const files: Record<string, string> = {};
  let shared = config;
  for (const name of config.generatedTokens) {
    const { text, file } = await readOrCreateSecretFile(config.dataDir, TOKEN_FILES[name], {
      generate: () => randomBytes(24).toString('base64url'),
      valid: (stored) => /^[A-Za-z0-9_-]{32,}$/.test(stored),
      expected: 'a token of 32 or more letters, digits, - and _',
    });
    files[name] = file;
    shared = name === 'ADMIN_TOKEN' ? { ...shared, adminToken: text } : { ...shared, serviceToken: text };
  }
  return { config: shared, files };
}
