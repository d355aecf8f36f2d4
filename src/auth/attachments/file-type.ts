import { fileTypeFromBuffer } from 'file-type';
import { detectMimeType } from 'nodemailer/lib/mime-funcs';

/** What the content's first bytes say it is; undefined when they match no known signature (text, say). */
export interface DetectedType {
  ext: string;
  mime: string;
}

/**
 * How much of the file is read before its type is decided. file-type needs 4100 bytes for most formats;
 * ZIP-based ones (jar, apk, docx) are told apart by entry names further in, so the sample is larger.
 */
export const TYPE_SAMPLE_SIZE = 64 * 1024;

/** The type from the content's magic bytes (file-type), plus `#!` scripts, which have no signature there. */
export async function detectType(sample: Buffer): Promise<DetectedType | undefined> {
  const found = await fileTypeFromBuffer(sample);
  if (found) return { ext: found.ext, mime: found.mime };
  if (sample.subarray(0, 2).toString('latin1') === '#!') return { ext: 'sh', mime: 'text/x-shellscript' };
  return undefined;
}

/**
 * ATTACHMENT_FORBIDDEN_TYPES: extensions are matched against the file's name and against the type
 * detected from its content; MIME types against the detected type only (the client's Content-Type is
 * never trusted). So `setup.exe` renamed `notes.txt` is caught by its bytes, and a script (no magic
 * bytes to detect) by its name.
 */
export class ForbiddenTypes {
  private readonly extensions: Set<string>;
  private readonly mimes: Set<string>;

  constructor(list: string[]) {
    this.extensions = new Set(list.filter((entry) => !entry.includes('/')));
    this.mimes = new Set(list.filter((entry) => entry.includes('/')));
  }

  /** Why the file is refused, or undefined when it is allowed. */
  reason(filename: string, detected: DetectedType | undefined): string | undefined {
    if (detected && (this.extensions.has(detected.ext) || this.mimes.has(detected.mime))) {
      return `its content is ${detected.mime} (.${detected.ext})`;
    }
    const extension = extensionOf(filename);
    if (extension && this.extensions.has(extension)) return `files named .${extension} are not allowed`;
    return undefined;
  }
}

/**
 * The last extension, lower-cased. Windows drops trailing dots and spaces from names, so `run.exe.`
 * counts as `.exe`.
 */
export function extensionOf(filename: string): string | undefined {
  const name = filename.replace(/[. ]+$/, '');
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : undefined;
}

/**
 * The Content-Type the reply carries: the detected type; for content without a signature (plain text,
 * CSV, ...) the type its extension suggests — a label only, the checks above have been made.
 */
export function contentTypeFor(filename: string, detected: DetectedType | undefined): string {
  if (detected) return detected.mime;
  const guessed = detectMimeType(filename.replace(/[. ]+$/, ''));
  return typeof guessed === 'string' && guessed ? guessed : 'application/octet-stream';
}
