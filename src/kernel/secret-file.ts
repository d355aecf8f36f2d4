import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

export interface SecretFileOptions {
  /** A fresh secret, as the text the file holds. */
  generate: () => string;
  /** Whether a stored text is usable. */
  valid: (text: string) => boolean;
  /** What a usable file holds, for the error about one that does not ("a 32-byte key as 64 hex digits"). */
  expected: string;
}

/**
 * A development secret kept in the data folder (outside production, where secrets must be given): read
 * it when the file is there, otherwise create it once, mode 0600, with an exclusive create so that two
 * processes starting on one folder end up with the same secret. An unusable file is an error naming it.
 */
export async function readOrCreateSecretFile(
  dataDir: string,
  name: string,
  options: SecretFileOptions,
): Promise<{ text: string; created: boolean; file: string }> {
  const dir = resolve(dataDir);
  const file = join(dir, name);
  const existing = await readSecret(file, options);
  if (existing !== undefined) return { text: existing, created: false, file };
  await mkdir(dir, { recursive: true });
  const text = options.generate();
  try {
    await writeFile(file, `${text}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const other = await readSecret(file, options);
    if (other === undefined) throw new Error(`${file} vanished while it was being read`);
    return { text: other, created: false, file };
  }
  return { text, created: true, file };
}

async function readSecret(file: string, options: SecretFileOptions): Promise<string | undefined> {
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (!options.valid(text)) throw new Error(`${file} does not hold ${options.expected}; fix or remove it`);
  return text;
}
