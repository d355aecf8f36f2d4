import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../../kernel/errors.ts';
import type { Clock } from '../../kernel/clock.ts';
import type { ObjectStore } from '../../kernel/objects/index.ts';
import type { ClamdClient, ClamdScan, ScanVerdict } from '../clamd/client.ts';
import { draftConflict, type DraftOwner, type DraftStore, type ExpectedVersion } from '../drafts/store.ts';
import { cleanFilename } from './filename.ts';
import type { DraftFileRow } from '../tables.ts';
import { contentTypeFor, detectType, TYPE_SAMPLE_SIZE, type DetectedType, type ForbiddenTypes } from './file-type.ts';

export interface AttachmentSettings {
  /** ATTACHMENT_MAX_SIZE */
  maxSize: number;
  /** REPLY_MAX_TOTAL_SIZE */
  maxTotalSize: number;
  forbidden: ForbiddenTypes;
  /** Undefined: scanning is off (CLAMD_HOST unset). */
  scanner: ClamdClient | undefined;
  /** ATTACHMENTS_REQUIRE_SCAN */
  requireScan: boolean;
}

/** A draft's file as the API shows it. */
export interface FileView {
  id: string;
  name: string;
  size: number;
  /** The Content-Type the reply carries. */
  contentType: string;
  /** What the content's magic bytes say; null when they match no known format. */
  detectedType: string | null;
  /** clamd scanned it and found nothing. */
  scanned: boolean;
  createdAt: string;
}

export function fileView(row: DraftFileRow): FileView {
  return {
    id: row.id,
    // Cleaned again: a draft may hold a name stored before cleanFilename dropped format characters.
    name: cleanFilename(row.filename, 'attachment'),
    size: row.size,
    contentType: row.content_type,
    detectedType: row.detected_type,
    scanned: row.scanned,
    createdAt: row.created_at.toISOString(),
  };
}

/** Where a draft file's bytes are kept. */
export const draftObjectKey = (draftId: string, fileId: string) => `auth/drafts/${draftId}/${fileId}`;

// file_too_large comes with a 403, and so do the other upload refusals
// (docs/specification.md#error-codes), so a client can treat every refused file alike.
const fileTooLarge = (message: string) => new AppError('file_too_large', 403, message);
const uploadLimitReached = (maxTotal: number) =>
  new AppError(
    'upload_limit_reached',
    403,
    `The reply's files may not exceed ${maxTotal} bytes together (REPLY_MAX_TOTAL_SIZE)`,
  );
const replyBeingSent = () => new AppError('conflict', 409, 'The reply is being sent right now; it cannot be changed');

/**
 * The files of reply drafts. An upload is streamed from the request to the object store and checked on
 * the way, never held whole in memory: bytes are counted against ATTACHMENT_MAX_SIZE and what the draft
 * may still take (the stream fails the moment either is passed, which aborts the store's upload), the
 * type is decided from the first 64 KiB before anything is stored, and the same bytes go to clamd as
 * they go to the store. The object is committed only if every check passed; otherwise it is deleted
 * along with its row.
 */
export class DraftAttachments {
  constructor(
    private readonly deps: {
      drafts: DraftStore;
      objects: ObjectStore;
      settings: AttachmentSettings;
      /** Told of each clamd verdict (for the metrics). */
      onScanned?: (verdict: ScanVerdict['outcome']) => void;
      clock: Clock;
    },
  ) {}

  /**
   * `part.refused` is called the moment the upload is refused, before the clean-up: the caller stops
   * reading the request there (the multipart parser would otherwise go on reading and dropping the rest
   * of the body at full speed while the store aborts its upload). `expected` is the reply's version the
   * client has (If-Match): checked before a byte is stored and again, atomically, when the file is.
   * Answers the file and the reply's new version.
   */
  async upload(
    owner: DraftOwner,
    part: { filename?: string; file: Readable; refused?: () => void },
    log: FastifyBaseLogger,
    expected?: ExpectedVersion,
  ): Promise<{ file: FileView; version: number }> {
    const { drafts, objects, settings } = this.deps;
    const filename = cleanFilename(part.filename, 'attachment');
    const byName = settings.forbidden.reason(filename, undefined);
    if (byName) throw forbiddenType(filename, byName);

    const scan = await this.openScan(log);
    const now = new Date(this.deps.clock.now());
    const begun = await drafts
      .beginUpload(
        owner,
        (draftId) => {
          const id = randomUUID();
          return { id, objectKey: draftObjectKey(draftId, id), filename, contentType: 'application/octet-stream' };
        },
        settings.maxTotalSize,
        now,
        expected,
      )
      .catch((error: unknown) => {
        scan?.abort();
        throw error;
      });
    if (begun === 'full' || begun === 'sending') {
      scan?.abort();
      throw begun === 'full' ? uploadLimitReached(settings.maxTotalSize) : replyBeingSent();
    }
    const { draftId, file } = begun;

    const check = new UploadCheck({
      ...settings,
      remaining: begun.remaining,
      filename,
      scan,
      log,
      refused: part.refused,
      onScanned: this.deps.onScanned,
    });
    try {
      const stored = await objects.put(
        file.objectKey,
        Readable.from(check.bytes(part.file), { objectMode: false, highWaterMark: 64 * 1024 }),
      );
      const contentType = contentTypeFor(filename, check.detected);
      const outcome = await drafts.completeUpload(
        draftId,
        file.id,
        { size: stored.size, contentType, detectedType: check.detected?.mime ?? null, scanned: check.scanned },
        settings.maxTotalSize,
        new Date(this.deps.clock.now()),
        expected,
      );
      if (outcome === 'over_limit') throw uploadLimitReached(settings.maxTotalSize);
      if (outcome === 'sending') throw replyBeingSent();
      if (outcome === 'conflict') throw draftConflict();
      if (outcome === 'gone')
        throw new AppError('conflict', 409, 'The draft was sent or has expired meanwhile; the file was not kept');
      log.info(
        { fileId: file.id, draftId, size: stored.size, contentType, scanned: check.scanned, version: outcome.version },
        'reply attachment stored',
      );
      const view: FileView = {
        id: file.id,
        name: filename,
        size: stored.size,
        contentType,
        detectedType: check.detected?.mime ?? null,
        scanned: check.scanned,
        createdAt: now.toISOString(),
      };
      return { file: view, version: outcome.version };
    } catch (error) {
      scan?.abort();
      // Nothing of a refused file stays: the object (if the store completed it), then its row. When the
      // store cannot delete now, the row stays `uploading` (listed nowhere, counted nowhere) and the
      // watcher deletes both once the retention period has passed.
      const objectGone = await objects.delete(file.objectKey).then(
        () => true,
        (cleanup: unknown) => {
          log.warn({ err: cleanup, key: file.objectKey }, 'could not delete a refused upload; the watcher will');
          return false;
        },
      );
      if (objectGone) {
        await drafts
          .deleteFile(draftId, file.id, undefined)
          .catch((cleanup: unknown) =>
            log.warn({ err: cleanup, fileId: file.id }, 'could not delete the row of a refused upload'),
          );
      }
      throw error;
    }
  }

  async list(owner: DraftOwner): Promise<FileView[]> {
    const draft = await this.deps.drafts.findOpen(owner);
    return draft ? (await this.deps.drafts.files(draft.id)).map(fileView) : [];
  }

  /**
   * DELETE /v1/message/files/{id}: the object first, then the row, under the draft's lock; a failure
   * between leaves a row, never an orphaned object. With `expected` (If-Match), only at that version
   * (draft_conflict otherwise, nothing removed). Answers the reply's new version.
   */
  async remove(owner: DraftOwner, fileId: string, expected?: ExpectedVersion): Promise<number> {
    const { drafts, objects } = this.deps;
    const removed = await drafts.removeFile(owner, fileId, new Date(this.deps.clock.now()), expected, (file) =>
      objects.delete(file.object_key),
    );
    if (removed === 'not_found') throw new AppError('not_found', 404, 'The draft has no file with this id');
    if (removed === 'sending') throw replyBeingSent();
    return removed;
  }

  /** Deletes a draft with every file: objects first, then the rows (a failure leaves the rows to retry from). */
  async deleteDraft(draftId: string): Promise<number | 'busy'> {
    return this.deps.drafts.deleteWithFiles(draftId, async (files) => {
      for (const file of files) await this.deps.objects.delete(file.object_key);
    });
  }

  private async openScan(log: FastifyBaseLogger): Promise<ClamdScan | undefined> {
    const { scanner, requireScan } = this.deps.settings;
    if (!scanner) return undefined;
    try {
      return await scanner.open();
    } catch (error) {
      if (requireScan) {
        throw new AppError(
          'unavailable',
          503,
          'The malware scanner is not available; uploads are refused until it is back. Try again later',
          { cause: error },
        );
      }
      log.warn(
        { err: error },
        'clamd is not reachable: accepting the upload unscanned (ATTACHMENTS_REQUIRE_SCAN=false)',
      );
      return undefined;
    }
  }
}

/** The FOUND verdicts clamd gives, with AlertExceedsMax, for what its limits stopped it scanning. */
const SCAN_LIMIT_EXCEEDED = /^Heuristics\.Limits\.Exceeded\./;

function forbiddenType(filename: string, reason: string): AppError {
  return new AppError('forbidden_file_type', 403, `${JSON.stringify(filename)} is refused: ${reason}`);
}

/** The checks one upload passes through, in the order its bytes arrive. */
class UploadCheck {
  detected: DetectedType | undefined;
  scanned = false;
  private scan: ClamdScan | undefined;

  constructor(
    private readonly options: AttachmentSettings & {
      remaining: number;
      filename: string;
      scan: ClamdScan | undefined;
      log: FastifyBaseLogger;
      refused: (() => void) | undefined;
      onScanned: ((verdict: ScanVerdict['outcome']) => void) | undefined;
    },
  ) {
    this.scan = options.scan;
  }

  /**
   * The upload's bytes, checked. Throwing here fails the stream the store reads, which aborts its upload
   * (S3: the multipart upload is aborted; small bodies are never sent, as they are sent whole at the end).
   */
  async *bytes(source: Readable): AsyncGenerator<Buffer> {
    const { maxSize, remaining, maxTotalSize } = this.options;
    const iterator = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    let total = 0;
    let sample: Buffer[] | undefined = [];
    let sampled = 0;
    try {
      for (;;) {
        let next: IteratorResult<Buffer>;
        try {
          next = await iterator.next();
        } catch (error) {
          throw new AppError('validation_failed', 400, 'The upload ended early or is not valid multipart data', {
            cause: error,
          });
        }
        if (next.done) break;
        const chunk = next.value;
        total += chunk.length;
        if (total > maxSize) throw fileTooLarge(`The file is larger than ${maxSize} bytes (ATTACHMENT_MAX_SIZE)`);
        if (total > remaining) throw uploadLimitReached(maxTotalSize);
        if (sample) {
          sample.push(chunk);
          sampled += chunk.length;
          if (sampled < TYPE_SAMPLE_SIZE) continue;
          const first = Buffer.concat(sample);
          sample = undefined;
          yield* this.pass(await this.decideType(first));
        } else {
          yield* this.pass(chunk);
        }
      }
      if (sample) yield* this.pass(await this.decideType(Buffer.concat(sample)));
      await this.finishScan();
    } catch (error) {
      this.options.refused?.();
      throw error;
    } finally {
      await iterator.return?.();
    }
  }

  private async decideType(sample: Buffer): Promise<Buffer> {
    this.detected = await detectType(sample);
    const reason = this.options.forbidden.reason(this.options.filename, this.detected);
    if (reason) throw forbiddenType(this.options.filename, reason);
    return sample;
  }

  private async *pass(chunk: Buffer): AsyncGenerator<Buffer> {
    if (this.scan && chunk.length > 0) {
      await this.scan.send(chunk);
      // clamd answers before the end only when it gives up: its size limit, or a failure.
      if (this.scan.early) this.judge(this.scan.early);
    }
    if (chunk.length > 0) yield chunk;
  }

  private async finishScan(): Promise<void> {
    if (!this.scan) return;
    this.judge(await this.scan.finish());
  }

  private judge(verdict: ScanVerdict): void {
    const { log, requireScan, filename } = this.options;
    this.options.onScanned?.(verdict.outcome);
    switch (verdict.outcome) {
      case 'clean':
        this.scanned = true;
        return;
      case 'infected':
        if (SCAN_LIMIT_EXCEEDED.test(verdict.signature)) {
          // clamd's AlertExceedsMax (deploy/clamd/clamd.conf): an archive that unpacks to more than it
          // scans, or nests deeper, is a zip bomb or hides its content; either way it was not checked.
          log.warn(
            { signature: verdict.signature, filename },
            "an upload exceeds the malware scanner's archive limits",
          );
          throw new AppError(
            'malware_detected',
            403,
            'The file cannot be checked for malware: it unpacks to more files or data, ' +
              `or nests deeper, than the scanner checks (${verdict.signature}); it was not kept`,
          );
        }
        log.warn({ signature: verdict.signature, filename }, 'malware found in an upload');
        throw new AppError(
          'malware_detected',
          403,
          `The file may contain malware (${verdict.signature}); it was not kept`,
        );
      case 'too_large':
        // Unscanned is not an option for a file the scanner refused to read: padding a file past the
        // scanner's limit would otherwise be a way around it. clamd's StreamMaxLength should be at least
        // ATTACHMENT_MAX_SIZE.
        log.warn({ filename }, "clamd refused the stream: it is larger than clamd's StreamMaxLength");
        throw fileTooLarge('The file is larger than the malware scanner accepts');
      case 'failed':
        this.scan = undefined;
        if (requireScan) {
          throw new AppError('unavailable', 503, 'The malware scanner failed to check the file; try again later', {
            cause: new Error(verdict.reason),
          });
        }
        log.warn(
          { reason: verdict.reason, filename },
          'clamd did not scan the upload: accepting it unscanned (ATTACHMENTS_REQUIRE_SCAN=false)',
        );
        return;
    }
  }
}
